package quicexp.jvm;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.CurrentUserContext$;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.AnalysisHelper$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.Option;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * The quicexp SQL endpoint's guard, a Spark session extension
 * ({@code spark.sql.extensions=quicexp.jvm.SqlGuardExtension}, the Thrift server only): an
 * allow-list of statements decided on the plans Spark builds ({@link SqlPolicy}):
 *
 * <ul>
 *   <li>read-only queries over catalog tables and views of the lake's schemas (named by the server's
 *       {@code spark.quicexp.guard.schemas}), SHOW / DESCRIBE of them, USE;
 *   <li>for the analyst role, temporary views over such queries and SET of a few session options;
 *   <li>nothing else, for any login: no data source by path or by options, no LOCATION, no DDL, DML,
 *       LOAD DATA, ADD, function creation or catalog change, no function that reaches the JVM.
 * </ul>
 *
 * <p>The parser ({@link GuardedParser}) checks each statement before analysis; a check rule
 * checks its analysed plan before anything runs. The check rule sees every analysis of the
 * session, also the ones Spark and Delta run for themselves (Delta reads its transaction log with
 * queries over the log's files, while a query is analysed or a DESCRIBE HISTORY runs): it checks the
 * analysis of the statement the parser has just read on this thread, at the analyser's outermost
 * level, and lets the others through. A statement's own analysis is always that one: the Thrift
 * server parses and analyses a statement on one thread; nested analyses belong to the statement's
 * (which is checked as a whole once they are done, before it runs); the analyses that run while an
 * allowed statement executes are the allowed statement's own code.
 *
 * <p>Roles come from the login ({@link Logins}); the user of a statement is the one Spark's
 * Thrift server records for {@code current_user()}.
 */
public final class SqlGuardExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  /** The lake's schemas, comma separated: set by quicexp.app.serve.server_conf. */
  static final String SCHEMAS = "spark.quicexp.guard.schemas";

  /** The thrown error: its message is what a JDBC / pyhive / Superset client shows. */
  public static final class RefusedException extends RuntimeException {
    RefusedException(String message) {
      super(message);
    }
  }

  /** Parsed on this thread and not yet checked: the next outermost analysis is the statement's. */
  private static final ThreadLocal<Boolean> PENDING = ThreadLocal.withInitial(() -> Boolean.FALSE);

  static void statementParsed() {
    PENDING.set(Boolean.TRUE);
  }

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
      @Override
      public ParserInterface apply(SparkSession session, ParserInterface delegate) {
        return new GuardedParser(session, delegate);
      }
    });
    extensions.injectCheckRule(new AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
      @Override
      public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
        return new Check(session);
      }
    });
    return BoxedUnit.UNIT;
  }

  /** Who runs the statement on this thread, with what role, against which lake. */
  static SqlPolicy.Context context(SparkSession session) {
    String configured = session.sparkContext().getConf().get(SCHEMAS, "");
    List<String> schemas = new ArrayList<>();
    for (String schema : configured.split(",")) {
      if (!schema.trim().isEmpty()) {
        schemas.add(schema.trim().toLowerCase(Locale.ROOT));
      }
    }
    if (schemas.isEmpty()) {
      throw SqlPolicy.refuse("every statement: the server names no lake schemas (" + SCHEMAS + ")",
          "the guard fails closed");
    }
    String user = CurrentUserContext$.MODULE$.CURRENT_USER().get();
    Logins.Role role = null;
    try {
      role = Logins.current().roleOf(user);
    } catch (IOException e) {
      role = null; // no logins file: no role for anyone (USE only)
    }
    return new SqlPolicy.Context(schemas, user == null ? "(none)" : user, role,
        name -> session.sessionState().catalog().isTempView(new TableIdentifier(name, Option.empty(), Option.empty())),
        () -> new ArrayList<>(Arrays.asList(session.sessionState().catalogManager().currentNamespace())));
  }

  /** The analyser's nesting on this thread (1: the outermost analysis). */
  private static int analyzerDepth() {
    Object depth = AnalysisHelper$.MODULE$.org$apache$spark$sql$catalyst$plans$logical$AnalysisHelper$$inAnalyzer().get();
    return depth instanceof Integer ? (Integer) depth : 0;
  }

  static final class Check extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    private final SparkSession session;

    Check(SparkSession session) {
      this.session = session;
    }

    @Override
    public BoxedUnit apply(LogicalPlan plan) {
      if (!PENDING.get() || analyzerDepth() > 1) {
        return BoxedUnit.UNIT; // Spark's or Delta's own analysis, see the class comment
      }
      PENDING.set(Boolean.FALSE);
      SqlPolicy.checkAnalysed(plan, context(session));
      return BoxedUnit.UNIT;
    }
  }
}
