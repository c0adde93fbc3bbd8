package quicexp.jvm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry$;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.RuntimeReplaceable;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.expressions.UserDefinedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Option;
import scala.Product;
import scala.collection.Iterator;

/**
 * What the quicexp SQL endpoint accepts: an allow-list decided on the plans Spark builds, never on
 * the SQL text. {@link SqlGuardExtension} applies it twice:
 *
 * <ol>
 *   <li>on the <em>parsed</em> plan, before analysis, because analysis itself reaches out: it
 *       resolves {@code format.`path`} relations (listing and sampling files), path-based Delta
 *       tables and table functions such as {@code table_changes_by_path}, and runs the SQL string
 *       of {@code EXECUTE IMMEDIATE}. The statement kind (root node), relation names, function
 *       names and those node kinds are checked there;
 *   <li>on the <em>analysed</em> plan, before anything runs (the authoritative check): every node
 *       must be a relational operator of the allow-list or an allowed leaf (a catalog table or
 *       view in the lake's schemas, a temporary view, VALUES, range), every expression's class
 *       must not be a refused function's, and commands must be of the login's role.
 * </ol>
 *
 * Views, CTEs, subqueries, comments and case tricks resolve into the same plan nodes, so they
 * cannot hide a relation or a function. Node classes are matched by simple name, so this compiles
 * against the catalyst API only (Delta's classes are reached by reflection).
 */
final class SqlPolicy {
  private SqlPolicy() {}

  static final String PREFIX = "quicexp SQL guard: refused: ";

  // --- the rules, as the refusal messages name them -------------------------------------------

  static final String RULE_READ_ONLY =
      "this endpoint runs read-only queries over the lake's catalog tables, SHOW/DESCRIBE and USE"
          + " (and, for the analyst role, temporary views and SET of a few session options);"
          + " DDL, DML, LOAD DATA, ADD, function creation, caching and catalog changes are refused for every login";
  static final String RULE_PATHS =
      "no data source is read by path or by options (jdbc, text, csv, json, parquet, orc, delta, binaryFile, ...)"
          + " and no table gets a LOCATION";
  static final String RULE_FUNCTIONS = "functions that reach the JVM or the host are refused (jvm/src/quicexp/jvm/functions.tsv)";

  // --- statements -----------------------------------------------------------------------------

  /** Relational operators a read-only query may contain, analysed (and, for the parse-level check,
   *  the root node of a parsed query). Leaves are checked one by one in {@link #checkLeaf}. */
  static final Set<String> OPERATORS = Set.of(
      "Project", "Filter", "Aggregate", "Join", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail",
      "Distinct", "Deduplicate", "Union", "Intersect", "Except", "SubqueryAlias", "View", "WithCTE",
      "CTERelationDef", "CTERelationRef", "Window", "Expand", "Generate", "Sample", "ResolvedHint",
      "RepartitionByExpression", "Repartition", "RebalancePartitions", "LateralJoin", "Subquery",
      "OneRowRelation", "LocalRelation", "Range", "Pivot", "Unpivot",
      // parsed (unresolved) roots of a query
      "UnresolvedWith", "UnresolvedRelation", "UnresolvedInlineTable", "UnresolvedHint", "UnresolvedHaving",
      "UnresolvedSubqueryColumnAliases", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases",
      "WithWindowDefinition", "PlanWithUnresolvedIdentifier");

  /** Metadata statements (parsed and analysed class names): allowed for every role, on lake objects. */
  static final Set<String> METADATA = Set.of(
      "ShowTables", "ShowTablesCommand", "ShowTableExtended", "ShowTablesExtended", "ShowNamespaces", "ShowViews", "ShowViewsCommand",
      "ShowFunctions", "ShowFunctionsCommand", "ShowColumns", "ShowColumnsCommand", "ShowDeltaTableColumnsCommand",
      "ShowTableProperties", "ShowTablePropertiesCommand", "ShowPartitions", "ShowPartitionsCommand",
      "ShowCreateTable", "ShowCreateTableCommand", "ShowCreateTableAsSerdeCommand", "ShowCurrentNamespace",
      "ShowCurrentNamespaceCommand", "ShowCatalogs", "ShowCatalogsCommand", "DescribeRelation",
      "DescribeTableCommand", "DescribeColumn", "DescribeColumnCommand", "DescribeNamespace",
      "DescribeDatabaseCommand", "DescribeFunction", "DescribeFunctionCommand", "DescribeDeltaDetailCommand",
      "DescribeDeltaHistory", "DescribeDeltaHistoryCommand");

  /** USE (parsed and analysed). */
  static final Set<String> USE = Set.of("SetCatalogAndNamespace", "SetNamespaceCommand");
  /** Temporary views of the analyst role (parsed and analysed). */
  static final Set<String> TEMP_VIEWS = Set.of("CreateViewCommand", "DropView", "DropTableCommand",
      "DropTempViewCommand");
  /** SET / RESET of an allowed session option, analyst role. */
  static final Set<String> SESSION = Set.of("SetCommand", "ResetCommand");

  /** Leaves and resolved children that name a catalog object; checked in {@link #checkLeaf}. */
  static final Set<String> LEAVES = Set.of("LogicalRelation", "HiveTableRelation", "DataSourceV2Relation",
      "ResolvedTable", "ResolvedPersistentView", "ResolvedTempView", "ResolvedNamespace", "ResolvedIdentifier",
      "UnresolvedIdentifier", "UnresolvedNamespace", "UnresolvedTableOrView", "UnresolvedTable", "UnresolvedView",
      "CurrentNamespace", "UnresolvedFunctionName", "ResolvedNonPersistentFunc", "ResolvedPersistentFunc",
      "UnresolvedPathOrIdentifier", "UnresolvedDeltaPathOrIdentifier");

  /** Session options an analyst may SET (the rest of the session's configuration is the server's). */
  static final Set<String> SESSION_OPTIONS = Set.of(
      "spark.sql.session.timeZone", "spark.sql.ansi.enabled", "spark.sql.legacy.timeParserPolicy",
      "spark.sql.shuffle.partitions");

  /** Table formats a catalog table of the lake may have. */
  static final Set<String> TABLE_FORMATS = Set.of("delta", "parquet", "orc");

  /** Nodes refused wherever they appear in a parsed plan, before analysis could act on them. */
  static final Map<String, String> PARSED_NODES = Map.ofEntries(
      Map.entry("ScriptTransformation", "script transformation (SELECT TRANSFORM ... USING) runs an OS process"),
      Map.entry("ExecuteImmediateQuery", "EXECUTE IMMEDIATE runs a SQL string the guard cannot see"),
      Map.entry("CompoundBody", "SQL scripting runs statements the guard cannot see one by one"),
      Map.entry("InsertIntoStatement", "DML writes to tables"),
      Map.entry("InsertIntoDir", "INSERT OVERWRITE DIRECTORY writes files"));

  /** A short name of what a refused statement or node does, for the message. */
  static String describe(String node) {
    String fixed = PARSED_NODES.get(node);
    if (fixed != null) {
      return fixed;
    }
    String n = node;
    if (n.startsWith("AddJars") || n.startsWith("AddFiles") || n.startsWith("AddArchives")) {
      return "ADD JAR / FILE / ARCHIVE loads code or files into the server";
    }
    if (n.contains("Function") && (n.startsWith("Create") || n.startsWith("Drop") || n.startsWith("Refresh"))) {
      return "function creation loads code into the server";
    }
    if (n.startsWith("LoadData")) {
      return "LOAD DATA reads, copies or moves host files";
    }
    if (n.endsWith("Using") || n.equals("CreateDataSourceTableCommand")) {
      return "a data source by path or by options";
    }
    if (n.startsWith("InsertInto") || n.startsWith("Append") || n.startsWith("Overwrite") || n.startsWith("Merge")
        || n.startsWith("Update") || n.startsWith("Delete") || n.startsWith("ReplaceData") || n.startsWith("WriteDelta")
        || n.startsWith("Truncate") || n.contains("Delta") && (n.contains("Write") || n.contains("Merge"))) {
      return "DML writes to tables";
    }
    if (n.startsWith("Cache") || n.startsWith("Uncache") || n.startsWith("ClearCache") || n.startsWith("Refresh")) {
      return "caching changes the server's state";
    }
    if (n.startsWith("List")) {
      return "listing the server's jars, files or archives";
    }
    if (n.startsWith("Explain") || n.startsWith("DescribeQuery")) {
      return "EXPLAIN / DESCRIBE QUERY are not on the allow-list";
    }
    return "DDL or a catalog change";
  }

  // --- functions ------------------------------------------------------------------------------

  /** functions.tsv: every function of the endpoint's SHOW FUNCTIONS, allowed or refused (why). */
  static final Map<String, String> REFUSED_FUNCTIONS;
  static final Set<String> ALLOWED_FUNCTIONS;
  /** Expression classes (simple names) of the refused functions, and of code loaded into the server. */
  static final Map<String, String> REFUSED_EXPRESSIONS;

  static {
    Map<String, String> refused = new TreeMap<>();
    Set<String> allowed = new java.util.TreeSet<>();
    try (InputStream in = SqlPolicy.class.getResourceAsStream("functions.tsv")) {
      if (in == null) {
        throw new IllegalStateException("quicexp SQL guard: functions.tsv is missing from the project jar");
      }
      BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line; (line = reader.readLine()) != null; ) {
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        String[] cols = line.split("\t", -1);
        if (cols.length != 3 || !(cols[1].equals("allowed") || cols[1].equals("refused"))) {
          throw new IllegalStateException("quicexp SQL guard: bad line in functions.tsv: " + line);
        }
        if (cols[1].equals("refused")) {
          refused.put(cols[0], cols[2]);
        } else {
          allowed.add(cols[0]);
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("quicexp SQL guard: cannot read functions.tsv", e);
    }
    REFUSED_FUNCTIONS = Collections.unmodifiableMap(refused);
    ALLOWED_FUNCTIONS = Collections.unmodifiableSet(allowed);
    Map<String, String> classes = new LinkedHashMap<>();
    classes.put("CallMethodViaReflection", refused.getOrDefault("reflect", "calls a JVM method"));
    for (Map.Entry<String, String> entry : refused.entrySet()) {
      Option<ExpressionInfo> info = FunctionRegistry$.MODULE$.builtin()
          .lookupFunction(new FunctionIdentifier(entry.getKey(), Option.empty(), Option.empty()));
      if (info.isDefined() && info.get().getClassName() != null) {
        String name = info.get().getClassName();
        classes.put(name.substring(name.lastIndexOf('.') + 1), entry.getKey() + "() " + entry.getValue());
      }
    }
    REFUSED_EXPRESSIONS = Collections.unmodifiableMap(classes);
  }

  /** The refusal for a function called by name (parse level), or null when it is allowed. */
  static String functionRefusal(String name) {
    String key = name.toLowerCase(Locale.ROOT);
    String why = REFUSED_FUNCTIONS.get(key);
    if (why != null) {
      return "function " + key + "() " + why + "; " + RULE_FUNCTIONS;
    }
    if (!ALLOWED_FUNCTIONS.contains(key)) {
      return "function " + key + "() is not a classified built-in (user-defined and unknown functions are refused); "
          + RULE_FUNCTIONS;
    }
    return null;
  }

  // --- the checks -----------------------------------------------------------------------------

  /** Who runs the statement and against which lake. */
  static final class Context {
    final List<String> lakeSchemas;
    final Logins.Role role;
    final String user;
    final java.util.function.Predicate<String> isTempView;
    final java.util.function.Supplier<List<String>> currentNamespace;

    Context(List<String> lakeSchemas, String user, Logins.Role role,
        java.util.function.Predicate<String> isTempView, java.util.function.Supplier<List<String>> currentNamespace) {
      this.lakeSchemas = lakeSchemas;
      this.user = user;
      this.role = role;
      this.isTempView = isTempView;
      this.currentNamespace = currentNamespace;
    }

    String lakeRule() {
      return "tables and views are read only from the lake's schemas (" + String.join(", ", lakeSchemas) + ")";
    }

    boolean isLake(String schema) {
      return schema != null && lakeSchemas.contains(schema.toLowerCase(Locale.ROOT));
    }
  }

  static SqlGuardExtension.RefusedException refuse(String what, String rule) {
    return new SqlGuardExtension.RefusedException(PREFIX + what + " — " + rule);
  }

  // ... parsed plans ...

  /** Before analysis: the statement kind and what analysis would act on. */
  static void checkParsed(LogicalPlan plan, Context ctx) {
    String root = simple(plan);
    if (!OPERATORS.contains(root) && !METADATA.contains(root) && !USE.contains(root)) {
      checkRoleStatement(root, ctx);
    }
    walkParsed(plan, ctx);
  }

  private static void checkRoleStatement(String root, Context ctx) {
    if (TEMP_VIEWS.contains(root)) {
      if (ctx.role == null || !ctx.role.tempViews) {
        throw refuse("temporary views (" + root + ") are not allowed for " + who(ctx), RULE_READ_ONLY);
      }
      return;
    }
    if (SESSION.contains(root)) {
      if (ctx.role == null || !ctx.role.sessionOptions) {
        throw refuse("SET / RESET (" + root + ") is not allowed for " + who(ctx), RULE_READ_ONLY);
      }
      return;
    }
    throw refuse(describe(root) + " (" + root + ")", RULE_READ_ONLY);
  }

  private static String who(Context ctx) {
    return ctx.role == null ? "login " + ctx.user + " (no role)" : "role " + ctx.role.name + " (login " + ctx.user + ")";
  }

  private static void walkParsed(LogicalPlan plan, Context ctx) {
    String name = simple(plan);
    String fixed = PARSED_NODES.get(name);
    if (fixed != null) {
      throw refuse(fixed + " (" + name + ")", RULE_READ_ONLY);
    }
    if (name.contains("PathBased")) {
      throw refuse("a table given by path (" + name + ")", RULE_PATHS);
    }
    if (name.equals("UnresolvedRelation")) {
      org.apache.spark.sql.catalyst.analysis.UnresolvedRelation rel =
          (org.apache.spark.sql.catalyst.analysis.UnresolvedRelation) plan;
      checkRelationName(seq(rel.multipartIdentifier()), ctx);
      if (!rel.options().isEmpty()) {
        throw refuse("options on a relation (WITH (...))", RULE_PATHS);
      }
    } else if (name.equals("UnresolvedTableValuedFunction")) {
      List<String> fn = seq(((org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction) plan).name());
      String refusal = functionRefusal(fn.get(fn.size() - 1));
      if (refusal != null) {
        throw refuse(refusal, "table functions read the lake only through its tables");
      }
    } else if (name.equals("PlanWithUnresolvedIdentifier")) {
      checkIdentifierClause(((org.apache.spark.sql.catalyst.analysis.PlanWithUnresolvedIdentifier) plan).identifierExpr(),
          ctx, true);
    } else if (NAMED_LEAVES.contains(name)) {
      Object parts = field(plan, "multipartIdentifier");
      parts = parts == null ? field(plan, "nameParts") : parts;
      if (parts instanceof scala.collection.Seq) {
        @SuppressWarnings("unchecked")
        scala.collection.Seq<String> names = (scala.collection.Seq<String>) parts;
        checkRelationName(seq(names), ctx);
      }
    }
    checkParsedFields(plan, ctx);
    for (Iterator<Expression> it = plan.expressions().iterator(); it.hasNext(); ) {
      walkParsedExpression(it.next(), ctx);
    }
    for (Iterator<LogicalPlan> it = plan.children().iterator(); it.hasNext(); ) {
      walkParsed(it.next(), ctx);
    }
    for (Iterator<?> it = plan.innerChildren().iterator(); it.hasNext(); ) {
      Object inner = it.next();
      if (inner instanceof LogicalPlan) {
        walkParsed((LogicalPlan) inner, ctx);
      }
    }
  }

  private static void walkParsedExpression(Expression e, Context ctx) {
    String name = simple(e);
    if (name.equals("UnresolvedFunction")) {
      List<String> fn = seq(((org.apache.spark.sql.catalyst.analysis.UnresolvedFunction) e).nameParts());
      String refusal = functionRefusal(fn.get(fn.size() - 1));
      if (refusal != null) {
        throw refuse(refusal, "the lake is read through built-in functions only");
      }
    } else if (name.equals("UnresolvedGenerator")) {
      String refusal = functionRefusal(((org.apache.spark.sql.catalyst.analysis.UnresolvedGenerator) e).name().funcName());
      if (refusal != null) {
        throw refuse(refusal, "the lake is read through built-in functions only");
      }
    } else if (name.equals("ExpressionWithUnresolvedIdentifier")) {
      checkIdentifierClause(((org.apache.spark.sql.catalyst.analysis.ExpressionWithUnresolvedIdentifier) e).identifierExpr(),
          ctx, false);
    }
    if (e instanceof SubqueryExpression) {
      walkParsed(((SubqueryExpression) e).plan(), ctx);
    }
    for (Iterator<Expression> it = e.children().iterator(); it.hasNext(); ) {
      walkParsedExpression(it.next(), ctx);
    }
  }

  /** Parsed nodes naming a table, view or identifier (checked like a relation name). */
  static final Set<String> NAMED_LEAVES = Set.of("UnresolvedTable", "UnresolvedTableOrView", "UnresolvedView",
      "UnresolvedIdentifier");

  /** Fields of a parsed node: a path or location given, or a table identifier (v1 commands). */
  private static void checkParsedFields(LogicalPlan plan, Context ctx) {
    Iterator<String> names = ((Product) plan).productElementNames();
    for (Iterator<Object> values = ((Product) plan).productIterator(); values.hasNext() && names.hasNext(); ) {
      Object value = values.next();
      String field = names.next().toLowerCase(Locale.ROOT);
      if (value instanceof Option) {
        value = ((Option<?>) value).isDefined() ? ((Option<?>) value).get() : null;
      }
      if ((field.contains("path") || field.contains("location")) && value instanceof String) {
        throw refuse("a path or LOCATION '" + value + "' (" + simple(plan) + ")", RULE_PATHS);
      }
      if (value instanceof TableIdentifier) {
        TableIdentifier id = (TableIdentifier) value;
        List<String> parts = new ArrayList<>();
        if (id.database().isDefined()) {
          parts.add(id.database().get());
        }
        parts.add(id.table());
        checkRelationName(parts, ctx);
      }
    }
  }

  /** IDENTIFIER('...'): the name must be a string literal, and it is checked like a written one. */
  private static void checkIdentifierClause(Expression identifier, Context ctx, boolean relation) {
    if (!(identifier instanceof org.apache.spark.sql.catalyst.expressions.Literal) || identifier.dataType() == null
        || !(identifier.dataType() instanceof org.apache.spark.sql.types.StringType)) {
      throw refuse("IDENTIFIER() with a computed name", "names are written, so the guard sees them before analysis");
    }
    Object value = ((org.apache.spark.sql.catalyst.expressions.Literal) identifier).value();
    List<String> parts = seq(org.apache.spark.sql.catalyst.parser.CatalystSqlParser$.MODULE$
        .parseMultipartIdentifier(String.valueOf(value)));
    String refusal = functionRefusal(parts.get(parts.size() - 1));
    if (!relation && refusal != null) {
      throw refuse(refusal, "the lake is read through built-in functions only");
    }
    if (relation) {
      checkRelationName(parts, ctx);
    }
  }

  /** A relation name as written: one part (a CTE, a temporary view, a table of the current schema,
   *  all checked again after analysis) or qualified by a lake schema. */
  static void checkRelationName(List<String> parts, Context ctx) {
    if (parts.size() == 1) {
      return;
    }
    String schema = parts.get(parts.size() - 2);
    if (parts.size() == 3 && !parts.get(0).equalsIgnoreCase("spark_catalog")) {
      throw refuse("catalog " + parts.get(0), ctx.lakeRule());
    }
    if (parts.size() > 3) {
      throw refuse("the name " + String.join(".", parts), ctx.lakeRule());
    }
    if (!ctx.isLake(schema)) {
      String last = parts.get(parts.size() - 1);
      boolean path = last.contains("/") || last.contains(":") || last.contains("\\");
      throw refuse((path ? "a data source by path: " : "relation ") + String.join(".", parts),
          path ? RULE_PATHS : ctx.lakeRule());
    }
  }

  // ... analysed plans ...

  /** After analysis, before anything runs: the authoritative check. */
  static void checkAnalysed(LogicalPlan plan, Context ctx) {
    String root = simple(plan);
    if (USE.contains(root)) {
      for (Iterator<LogicalPlan> it = plan.children().iterator(); it.hasNext(); ) {
        LogicalPlan child = it.next();
        List<String> ns = namespaceOf(child);
        if (ns == null || ns.size() != 1 || !(ctx.isLake(ns.get(0)) || ns.get(0).equalsIgnoreCase("default"))) {
          throw refuse("USE " + (ns == null ? simple(child) : String.join(".", ns)),
              "USE switches to the lake's schemas or default only");
        }
      }
      return;
    }
    if (ctx.role == null) {
      throw refuse("login " + ctx.user + " has no role on this endpoint",
          "every login is listed with a role in the server's logins file");
    }
    if (METADATA.contains(root)) {
      checkMetadata(plan, ctx);
    } else if (TEMP_VIEWS.contains(root) || SESSION.contains(root)) {
      checkRoleStatement(root, ctx);
      if (root.equals("CreateViewCommand")) {
        checkTempView(plan, ctx);
      } else if (root.equals("DropTempViewCommand")) {
        Object id = ((Product) plan).productElement(0);
        if (!(id instanceof org.apache.spark.sql.connector.catalog.Identifier)
            || ((org.apache.spark.sql.connector.catalog.Identifier) id).namespace().length != 0) {
          throw refuse("DROP of a view that is not a temporary view", RULE_READ_ONLY);
        }
      } else if (root.equals("DropTableCommand")) {
        TableIdentifier name = (TableIdentifier) field(plan, "tableName");
        if (name == null || name.database().isDefined() || !ctx.isTempView.test(name.table())) {
          throw refuse("DROP of " + (name == null ? "?" : name.unquotedString()) + ", which is not a temporary view",
              RULE_READ_ONLY);
        }
      } else if (root.equals("SetCommand")) {
        checkSet(plan);
      } else if (root.equals("ResetCommand")) {
        Option<?> key = (Option<?>) field(plan, "config");
        if (key == null || key.isEmpty() || !SESSION_OPTIONS.contains(String.valueOf(key.get()))) {
          throw refuse("RESET " + (key == null || key.isEmpty() ? "(all)" : key.get()),
              "SET / RESET only of the session options " + String.join(", ", new java.util.TreeSet<>(SESSION_OPTIONS)));
        }
      } else {
        throw refuse(describe(root) + " (" + root + ")", RULE_READ_ONLY);
      }
    } else if (OPERATORS.contains(root) || LEAVES.contains(root)) {
      checkQuery(plan, ctx);
    } else {
      throw refuse(describe(root) + " (" + root + ")", RULE_READ_ONLY);
    }
  }

  private static void checkSet(LogicalPlan plan) {
    Option<?> kv = (Option<?>) field(plan, "kv");
    String allowed = "SET / RESET only of the session options "
        + String.join(", ", new java.util.TreeSet<>(SESSION_OPTIONS));
    if (kv == null || kv.isEmpty()) {
      throw refuse("SET without a key (lists the server's configuration)", allowed);
    }
    String key = String.valueOf(((scala.Tuple2<?, ?>) kv.get())._1());
    if (!SESSION_OPTIONS.contains(key)) {
      throw refuse("SET " + key, allowed);
    }
  }

  private static void checkTempView(LogicalPlan plan, Context ctx) {
    Object type = field(plan, "viewType");
    String kind = type == null ? "?" : type.getClass().getSimpleName();
    if (!kind.startsWith("LocalTempView")) {
      throw refuse("a " + (kind.startsWith("Global") ? "global temporary" : "permanent") + " view", RULE_READ_ONLY);
    }
    Object inner = field(plan, "plan");
    if (!(inner instanceof LogicalPlan)) {
      throw refuse("a temporary view without a query", RULE_READ_ONLY);
    }
    checkQuery((LogicalPlan) inner, ctx);
  }

  /** A query: operators of the allow-list, allowed leaves, no refused function, down to every
   *  subquery and view. */
  static void checkQuery(LogicalPlan plan, Context ctx) {
    String name = simple(plan);
    if (LEAVES.contains(name)) {
      checkLeaf(plan, ctx);
    } else if (!OPERATORS.contains(name)) {
      throw refuse(describe(name) + " (" + name + ")", RULE_READ_ONLY);
    }
    if (name.equals("View")) {
      org.apache.spark.sql.catalyst.plans.logical.View view = (org.apache.spark.sql.catalyst.plans.logical.View) plan;
      if (!view.isTempView()) {
        checkCatalogTable(view.desc(), ctx, false);
      }
    }
    for (Iterator<Expression> it = plan.expressions().iterator(); it.hasNext(); ) {
      checkExpression(it.next(), ctx);
    }
    for (Iterator<LogicalPlan> it = plan.children().iterator(); it.hasNext(); ) {
      checkQuery(it.next(), ctx);
    }
    for (Iterator<?> it = plan.innerChildren().iterator(); it.hasNext(); ) {
      Object inner = it.next();
      if (inner instanceof LogicalPlan) {
        checkQuery((LogicalPlan) inner, ctx);
      }
    }
  }

  private static void checkExpression(Expression e, Context ctx) {
    String name = simple(e);
    String refused = REFUSED_EXPRESSIONS.get(name);
    if (refused != null) {
      throw refuse(refused + " (" + name + ")", RULE_FUNCTIONS);
    }
    if (e instanceof UserDefinedExpression || name.startsWith("Hive") && name.contains("UD")) {
      throw refuse("a user-defined function runs code loaded into the server (" + name + ")", RULE_FUNCTIONS);
    }
    if (e instanceof SubqueryExpression) {
      checkQuery(((SubqueryExpression) e).plan(), ctx);
    }
    if (e instanceof RuntimeReplaceable) {
      checkExpression(((RuntimeReplaceable) e).replacement(), ctx);
    }
    for (Iterator<Expression> it = e.children().iterator(); it.hasNext(); ) {
      checkExpression(it.next(), ctx);
    }
  }

  /** A leaf of a query or a resolved child of a metadata command: a catalog object of the lake. */
  static void checkLeaf(LogicalPlan plan, Context ctx) {
    String name = simple(plan);
    switch (name) {
      case "LogicalRelation": {
        Option<CatalogTable> table = ((org.apache.spark.sql.execution.datasources.LogicalRelation) plan).catalogTable();
        if (table.isEmpty()) {
          throw refuse("a data source by path or by options ("
              + ((org.apache.spark.sql.execution.datasources.LogicalRelation) plan).relation().getClass().getSimpleName()
              + ")", RULE_PATHS);
        }
        checkCatalogTable(table.get(), ctx, true);
        return;
      }
      case "HiveTableRelation":
        checkCatalogTable((CatalogTable) field(plan, "tableMeta"), ctx, true);
        return;
      case "DataSourceV2Relation": {
        org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation rel =
            (org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation) plan;
        if (rel.catalog().isEmpty() || rel.identifier().isEmpty()) {
          throw refuse("a data source by path or by options (" + rel.table().name() + ")", RULE_PATHS);
        }
        checkV2(rel.catalog().get().name(), java.util.Arrays.asList(rel.identifier().get().namespace()), rel.table(), ctx);
        return;
      }
      case "ResolvedTable": {
        org.apache.spark.sql.catalyst.analysis.ResolvedTable t = (org.apache.spark.sql.catalyst.analysis.ResolvedTable) plan;
        checkV2(t.catalog().name(), java.util.Arrays.asList(t.identifier().namespace()), t.table(), ctx);
        return;
      }
      case "ResolvedPersistentView": {
        Object id = field(plan, "identifier");
        List<String> ns = java.util.Arrays.asList(((org.apache.spark.sql.connector.catalog.Identifier) id).namespace());
        if (ns.size() != 1 || !ctx.isLake(ns.get(0))) {
          throw refuse("view " + String.join(".", ns) + "." + ((org.apache.spark.sql.connector.catalog.Identifier) id).name(),
              ctx.lakeRule());
        }
        return;
      }
      case "ResolvedNamespace": {
        List<String> ns = namespaceOf(plan);
        if (ns != null && !ns.isEmpty() && !(ns.size() == 1 && ctx.isLake(ns.get(0)))) {
          throw refuse("schema " + String.join(".", ns), ctx.lakeRule());
        }
        return;
      }
      case "ResolvedTempView":
      case "ResolvedNonPersistentFunc":
      case "ResolvedPersistentFunc":
      case "UnresolvedFunctionName":
      case "CurrentNamespace":
        return;
      default:
        throw refuse("the object " + name, ctx.lakeRule());
    }
  }

  private static void checkV2(String catalog, List<String> namespace, Object table, Context ctx) {
    if (!catalog.equals("spark_catalog")) {
      throw refuse("catalog " + catalog, ctx.lakeRule());
    }
    if (namespace.size() != 1 || !ctx.isLake(namespace.get(0))) {
      throw refuse("relation " + String.join(".", namespace), ctx.lakeRule());
    }
    Object catalogTable = call(table, "catalogTable");
    if (catalogTable instanceof Option && ((Option<?>) catalogTable).isEmpty()) {
      throw refuse("a Delta table by path", RULE_PATHS);
    }
    if (catalogTable instanceof Option) {
      checkCatalogTable((CatalogTable) ((Option<?>) catalogTable).get(), ctx, true);
    }
  }

  private static void checkCatalogTable(CatalogTable table, Context ctx, boolean data) {
    if (table == null) {
      throw refuse("a relation without a catalog table", RULE_PATHS);
    }
    Option<String> db = table.identifier().database();
    if (db.isEmpty() || !ctx.isLake(db.get())) {
      throw refuse("relation " + table.identifier().unquotedString(), ctx.lakeRule());
    }
    if (data && !table.tableType().name().equals("VIEW")) {
      String format = table.provider().isDefined() ? table.provider().get().toLowerCase(Locale.ROOT) : "hive";
      if (format.equals("hive")) {
        format = table.storage().serde().isDefined() ? table.storage().serde().get().toLowerCase(Locale.ROOT) : "hive";
        format = format.contains("parquet") ? "parquet" : format.contains("orc") ? "orc" : format;
      }
      if (!TABLE_FORMATS.contains(format)) {
        throw refuse("table " + table.identifier().unquotedString() + " of format " + format,
            "the lake's tables are " + String.join(", ", new java.util.TreeSet<>(TABLE_FORMATS)) + "; " + RULE_PATHS);
      }
    }
  }

  /** SHOW / DESCRIBE: their resolved children and the catalog names in their fields are the lake's. */
  private static void checkMetadata(LogicalPlan plan, Context ctx) {
    for (Iterator<LogicalPlan> it = plan.children().iterator(); it.hasNext(); ) {
      LogicalPlan child = it.next();
      if (!LEAVES.contains(simple(child))) {
        throw refuse(simple(plan) + " of " + simple(child), RULE_PATHS);
      }
      checkLeaf(child, ctx);
    }
    Iterator<String> names = ((Product) plan).productElementNames();
    for (Iterator<Object> values = ((Product) plan).productIterator(); values.hasNext() && names.hasNext(); ) {
      Object value = values.next();
      String field = names.next();
      if (value instanceof Option) {
        value = ((Option<?>) value).isDefined() ? ((Option<?>) value).get() : null;
      }
      if (value instanceof TableIdentifier) {
        TableIdentifier id = (TableIdentifier) value;
        if (id.database().isEmpty() ? !ctx.isTempView.test(id.table()) : !ctx.isLake(id.database().get())) {
          throw refuse("relation " + id.unquotedString(), ctx.lakeRule());
        }
      } else if (value instanceof String && field.equals("databaseName")) {
        if (!ctx.isLake((String) value)) {
          throw refuse("schema " + value, ctx.lakeRule());
        }
      } else if (value != null && value.getClass().getSimpleName().equals("DeltaTableV2")) {
        Object table = call(value, "catalogTable");
        if (!(table instanceof Option) || ((Option<?>) table).isEmpty()) {
          throw refuse("a Delta table by path", RULE_PATHS);
        }
        checkCatalogTable((CatalogTable) ((Option<?>) table).get(), ctx, true);
      } else if (field.toLowerCase(Locale.ROOT).contains("path") && value instanceof String) {
        throw refuse("a table by path", RULE_PATHS);
      }
    }
    if ((simple(plan).equals("ShowTablesCommand") || simple(plan).equals("ShowViewsCommand"))
        && field(plan, "databaseName") instanceof Option && ((Option<?>) field(plan, "databaseName")).isEmpty()) {
      List<String> current = ctx.currentNamespace.get();
      if (current.size() != 1 || !ctx.isLake(current.get(0))) {
        throw refuse("schema " + String.join(".", current), ctx.lakeRule());
      }
    }
  }

  // --- helpers --------------------------------------------------------------------------------

  static String simple(Object node) {
    return node.getClass().getSimpleName();
  }

  static List<String> seq(scala.collection.Seq<String> parts) {
    List<String> out = new ArrayList<>();
    for (Iterator<String> it = parts.iterator(); it.hasNext(); ) {
      out.add(it.next());
    }
    return out;
  }

  private static List<String> namespaceOf(LogicalPlan plan) {
    if (plan instanceof org.apache.spark.sql.catalyst.analysis.ResolvedNamespace) {
      org.apache.spark.sql.catalyst.analysis.ResolvedNamespace ns = (org.apache.spark.sql.catalyst.analysis.ResolvedNamespace) plan;
      if (!ns.catalog().name().equals("spark_catalog")) {
        return null;
      }
      return seq(ns.namespace());
    }
    return null;
  }

  /** The case-class field ``name`` of a plan node, or null. */
  static Object field(Object node, String name) {
    if (!(node instanceof Product)) {
      return null;
    }
    Product p = (Product) node;
    Iterator<String> names = p.productElementNames();
    for (Iterator<Object> values = p.productIterator(); values.hasNext() && names.hasNext(); ) {
      Object value = values.next();
      if (names.next().equals(name)) {
        return value;
      }
    }
    return null;
  }

  private static Object call(Object target, String method) {
    try {
      return target.getClass().getMethod(method).invoke(target);
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }
}
