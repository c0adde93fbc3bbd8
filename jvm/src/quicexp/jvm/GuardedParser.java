package quicexp.jvm;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.parser.ParseException;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;
import scala.collection.Iterator;

/**
 * The endpoint's SQL parser: Spark's (with Delta's), and before any statement is analysed, the
 * checks that must come before analysis (SqlPolicy.checkParsed) and the session's configuration:
 * a Thrift client can set any SQL option when it opens its session ({@code set:hiveconf:} and
 * {@code set:hivevar:} keys, applied without SQL), and a few of them would let analysis reach out
 * (a {@code spark.sql.catalog.<name>} plug-in with a JDBC URL, {@code spark.sql.runSQLOnFiles}).
 * So every statement first checks that the session's options are the server's, or in the short
 * list a session may change.
 */
final class GuardedParser implements ParserInterface {
  /** Options a session may hold with any value: the analysts' (SqlPolicy.SESSION_OPTIONS), what
   *  Spark's Thrift server sets on every session, and what Hive JDBC clients send on connect. */
  static final Set<String> SESSION_KEYS;

  static {
    Set<String> keys = new TreeSet<>(SqlPolicy.SESSION_OPTIONS);
    keys.add("spark.sql.datetime.java8API.enabled"); // SparkSQLSessionManager.openSession
    keys.add("spark.sql.binaryOutputStyle"); // SparkExecuteStatementOperation, for binary results
    keys.add("hive.server2.thrift.resultset.default.fetch.size"); // Hive JDBC driver's open request
    SESSION_KEYS = java.util.Collections.unmodifiableSet(keys);
  }

  /** The server's options that the guard depends on, with the value they must have. */
  static final Map<String, String> PINNED = Map.of(
      "spark.sql.runSQLOnFiles", "false", // no `format`.`path` relation is even resolved
      "spark.sql.scripting.enabled", "false"); // no SQL scripts (statements the guard sees one by one)

  private final SparkSession session;
  private final ParserInterface delegate;
  /** The options every session of this server starts from (the same for all: computed once). */
  private static Map<String, String> server;

  GuardedParser(SparkSession session, ParserInterface delegate) {
    this.session = session;
    this.delegate = delegate;
  }

  @Override
  public LogicalPlan parsePlan(String sqlText) throws ParseException {
    SqlPolicy.Context ctx = SqlGuardExtension.context(session);
    checkSessionOptions();
    LogicalPlan plan = delegate.parsePlan(sqlText);
    SqlPolicy.checkParsed(plan, ctx);
    SqlGuardExtension.statementParsed(); // its analysis is the next one to check on this thread
    return plan;
  }

  private Map<String, String> serverOptions() {
    synchronized (GuardedParser.class) {
      return serverOptionsLocked();
    }
  }

  private Map<String, String> serverOptionsLocked() {
    if (server == null) {
      Map<String, String> values = new HashMap<>();
      // What every session of the server starts from: a new session's configuration (the
      // server's Spark configuration with its --hiveconf settings, normalised, and what the
      // session extensions set on each session, e.g. Delta's Parquet field ids).
      // (Delta sets its options when the session's analyser is built: build it.)
      org.apache.spark.sql.internal.SessionState state = session.newSession().sessionState();
      state.analyzer();
      scala.collection.immutable.Map<String, String> fresh = state.conf().getAllConfs();
      for (Iterator<Tuple2<String, String>> it = fresh.iterator(); it.hasNext(); ) {
        Tuple2<String, String> kv = it.next();
        values.put(kv._1(), kv._2());
      }
      server = values;
    }
    return server;
  }

  private void checkSessionOptions() {
    Map<String, String> server = serverOptions();
    scala.collection.immutable.Map<String, String> conf = session.sessionState().conf().getAllConfs();
    List<String> differing = new ArrayList<>();
    for (Iterator<Tuple2<String, String>> it = conf.iterator(); it.hasNext(); ) {
      Tuple2<String, String> kv = it.next();
      // (Hive copies the server's --hiveconf settings, which are JVM system properties, into
      // every session's overridden configuration: those are the server's too.)
      if (!SESSION_KEYS.contains(kv._1()) && !kv._2().equals(server.get(kv._1()))
          && !kv._2().equals(System.getProperty(kv._1()))) {
        differing.add(kv._1());
      }
    }
    if (!differing.isEmpty()) {
      Collections.sort(differing);
      throw SqlPolicy.refuse("session options " + String.join(", ", differing) + " differ from the server's",
          "a session may set only " + String.join(", ", new TreeSet<>(SqlPolicy.SESSION_OPTIONS))
              + " (SET, or the client's session configuration)");
    }
    for (Map.Entry<String, String> pin : PINNED.entrySet()) {
      String value = conf.contains(pin.getKey()) ? conf.apply(pin.getKey()) : null;
      if (!pin.getValue().equals(value)) {
        throw SqlPolicy.refuse("the server runs without " + pin.getKey() + "=" + pin.getValue(),
            "the endpoint's guard depends on it (quicexp.app.serve.server_conf)");
      }
    }
  }

  @Override
  public Expression parseExpression(String sqlText) throws ParseException {
    return delegate.parseExpression(sqlText);
  }

  @Override
  public TableIdentifier parseTableIdentifier(String sqlText) throws ParseException {
    return delegate.parseTableIdentifier(sqlText);
  }

  @Override
  public FunctionIdentifier parseFunctionIdentifier(String sqlText) throws ParseException {
    return delegate.parseFunctionIdentifier(sqlText);
  }

  @Override
  public scala.collection.immutable.Seq<String> parseMultipartIdentifier(String sqlText) throws ParseException {
    return delegate.parseMultipartIdentifier(sqlText);
  }

  /** View texts from the catalog (written by the pipeline); checked as part of the analysed plan. */
  @Override
  public LogicalPlan parseQuery(String sqlText) throws ParseException {
    return delegate.parseQuery(sqlText);
  }

  @Override
  public StructType parseRoutineParam(String sqlText) throws ParseException {
    return delegate.parseRoutineParam(sqlText);
  }

  @Override
  public StructType parseTableSchema(String sqlText) throws ParseException {
    return delegate.parseTableSchema(sqlText);
  }

  @Override
  public DataType parseDataType(String sqlText) throws ParseException {
    return delegate.parseDataType(sqlText);
  }
}
