package quicexp.jvm;

import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Function1;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * A Spark session extension ({@code spark.sql.extensions=quicexp.jvm.SqlGuardExtension}) whose
 * check rule refuses, after analysis and before anything runs, every plan that could start a
 * process, call a JVM method, load code or write files outside the lake:
 *
 * <ul>
 *   <li>{@code SELECT TRANSFORM(...) USING 'cmd'} (script transformation: runs cmd as the server's user);
 *   <li>{@code reflect()}, {@code java_method()}, {@code try_reflect()} (any static Java method);
 *   <li>{@code CREATE FUNCTION} (a Hive UDF class such as GenericUDFReflect, or a jar) and
 *       {@code ADD JAR / FILE / ARCHIVE};
 *   <li>{@code INSERT OVERWRITE [LOCAL] DIRECTORY} (files written anywhere the server may write).
 * </ul>
 *
 * <p>Spark has no configuration switch for any of these (Spark 4.0), so the Thrift server gets this
 * extension; the pipeline's own sessions (Python code that can run anything anyway) do not.
 * Nodes are matched by class name, so the rule compiles against the catalyst API only.
 */
public final class SqlGuardExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  /** Plan node class (simple name) -> what it would do. */
  static final Map<String, String> PLANS = Map.ofEntries(
      Map.entry("ScriptTransformation", "script transformation (SELECT TRANSFORM ... USING) runs an OS process"),
      Map.entry("CreateFunction", "CREATE FUNCTION loads a class or a jar into the server"),
      Map.entry("CreateFunctionCommand", "CREATE FUNCTION loads a class or a jar into the server"),
      Map.entry("CreateUserDefinedFunctionCommand", "CREATE FUNCTION defines code in the server"),
      Map.entry("AddJarsCommand", "ADD JAR loads code into the server"),
      Map.entry("AddFilesCommand", "ADD FILE copies files into the server"),
      Map.entry("AddArchivesCommand", "ADD ARCHIVE copies files into the server"),
      Map.entry("InsertIntoDir", "INSERT OVERWRITE DIRECTORY writes files outside the lake"),
      Map.entry("InsertIntoDataSourceDirCommand", "INSERT OVERWRITE DIRECTORY writes files outside the lake"),
      Map.entry("InsertIntoHiveDirCommand", "INSERT OVERWRITE DIRECTORY writes files outside the lake"));

  /** Expression class (simple name) -> what it would do. */
  static final Map<String, String> EXPRESSIONS = Map.ofEntries(
      Map.entry("CallMethodViaReflection", "reflect() / java_method() / try_reflect() call a JVM method"),
      Map.entry("HiveSimpleUDF", "a Hive UDF runs code loaded into the server"),
      Map.entry("HiveGenericUDF", "a Hive UDF runs code loaded into the server"),
      Map.entry("HiveGenericUDTF", "a Hive UDTF runs code loaded into the server"),
      Map.entry("HiveUDAFFunction", "a Hive UDAF runs code loaded into the server"));

  static final String PREFIX = "quicexp SQL guard: refused: ";
  static final String SUFFIX = "; this SQL endpoint does not allow it for any user";

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectCheckRule(new AbstractFunction1<SparkSession, Function1<LogicalPlan, BoxedUnit>>() {
      @Override
      public Function1<LogicalPlan, BoxedUnit> apply(SparkSession session) {
        return new Check();
      }
    });
    return BoxedUnit.UNIT;
  }

  /** The thrown error: its message is what a JDBC / pyhive / Superset client shows. */
  public static final class RefusedException extends RuntimeException {
    RefusedException(String what) {
      super(PREFIX + what + SUFFIX);
    }
  }

  static final class Check extends AbstractFunction1<LogicalPlan, BoxedUnit> {
    @Override
    public BoxedUnit apply(LogicalPlan plan) {
      visitPlan(plan);
      return BoxedUnit.UNIT;
    }

    private static void visitPlan(LogicalPlan plan) {
      String refused = PLANS.get(plan.getClass().getSimpleName());
      if (refused != null) {
        throw new RefusedException(refused);
      }
      for (Iterator<Expression> it = plan.expressions().iterator(); it.hasNext(); ) {
        visitExpression(it.next());
      }
      for (Iterator<LogicalPlan> it = plan.children().iterator(); it.hasNext(); ) {
        visitPlan(it.next());
      }
      for (Iterator<LogicalPlan> it = plan.subqueries().iterator(); it.hasNext(); ) {
        visitPlan(it.next());
      }
      for (Iterator<?> it = plan.innerChildren().iterator(); it.hasNext(); ) {
        Object inner = it.next();
        if (inner instanceof LogicalPlan) {
          visitPlan((LogicalPlan) inner);
        }
      }
    }

    private static void visitExpression(Expression expression) {
      String refused = EXPRESSIONS.get(expression.getClass().getSimpleName());
      if (refused != null) {
        throw new RefusedException(refused);
      }
      for (Iterator<Expression> it = expression.children().iterator(); it.hasNext(); ) {
        visitExpression(it.next());
      }
    }
  }
}
