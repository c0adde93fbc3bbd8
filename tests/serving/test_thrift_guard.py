"""The SQL endpoint's allow-list (jvm/src quicexp.jvm.SqlGuardExtension), through the running
Thrift server with the generated logins: reads of the lake's tables pass; every case of the
audit of issue 40 is refused with the guard's message and leaves the host as it was: code
execution (the Derby JDBC chain, TRANSFORM, reflect, UDF classes, jars), host files read, written,
deleted or moved (data sources by path or by options, LOCATION, LOAD DATA, INSERT OVERWRITE
DIRECTORY, path-based Delta commands), the password files, and the session options a client can
set when it connects. One server, one connection per login; the cases are parametrised over it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from quicexp.app.serve import ThriftPaths, connect
from quicexp.catalog import derby_properties_file
from quicexp.config import REPO_ROOT

GUARD = "quicexp SQL guard: refused: "
PATH = "a data source by path"
OPTIONS = "a data source by path or by options"
DDL = "DDL or a catalog change"
FUNCTIONS = REPO_ROOT / "jvm" / "src" / "quicexp" / "jvm" / "functions.tsv"


@pytest.fixture(scope="module")
def names(serving, thrift, pipeline_lake, tmp_path_factory):
    """What the cases are formatted with: the lake's schemas, the password files, a host folder."""
    settings = serving.settings
    host = tmp_path_factory.mktemp("host")
    (host / "sentinel.txt").write_text("a host file\n")
    (host / "data").mkdir()
    (host / "data" / "part-0.txt").write_text("1\n2\n")
    paths = ThriftPaths.of(settings)
    return {
        "bronze": settings.bronze_schema, "silver": settings.silver_schema, "gold": settings.gold_schema,
        "host": str(host), "logins": str(paths.logins), "analyst_login": str(paths.login_file("analyst")),
        "superset_login": str(paths.login_file("superset")), "derby": str(derby_properties_file(settings)),
        "other": pipeline_lake.settings.bronze_schema,  # a schema of the metastore outside this lake
    }  # fmt: skip


@pytest.fixture(scope="module")
def analyst(serving, thrift):
    conn = connect(serving.settings, "analyst")
    yield conn.cursor()
    conn.close()


@pytest.fixture(scope="module")
def superset_login(serving, thrift):
    conn = connect(serving.settings, "superset")
    yield conn.cursor()
    conn.close()


def _refusal(cur, sql: str) -> str:
    from pyhive.exc import OperationalError

    with pytest.raises(OperationalError) as refused:
        cur.execute(sql)
        cur.fetchall()
    return str(refused.value)


def _host_state(folder: Path) -> list[tuple[str, str]]:
    return sorted(
        (str(p.relative_to(folder)), hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
        for p in folder.rglob("*")
    )


# --- what analysts, notebooks and Superset do ---------------------------------------------------


def test_select_1_and_every_table_of_the_gold_schema_read_with_both_logins(names, analyst, superset_login):
    for cur in (analyst, superset_login):
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]
    analyst.execute(f"SHOW TABLES IN {names['gold']}")
    tables = [row[1] for row in analyst.fetchall()]
    assert {"experiment_results", "metric_values_daily", "experiment_sufficient_stats"} <= set(tables)
    for table in tables:
        for cur in (analyst, superset_login):
            cur.execute(f"SELECT * FROM {names['gold']}.{table} LIMIT 3")
            assert len(cur.fetchall()) >= 1, table


ALLOWED = [
    "SELECT count(*) FROM {silver}.int_experiment_units_segmented_to_dates",
    "SELECT count(*) FROM {bronze}.http_transactions WHERE event_date IS NOT NULL",
    "WITH r AS (SELECT metric, delta_rel FROM {gold}.experiment_results) SELECT metric, max(delta_rel) FROM r GROUP BY metric",
    "SELECT metric, rank() OVER (PARTITION BY metric ORDER BY as_of_date DESC) FROM {gold}.experiment_results LIMIT 5",
    "SELECT * FROM {gold}.experiment_results r WHERE r.metric IN (SELECT metric FROM {gold}.metric_values_daily) LIMIT 1",
    "SELECT max_by(delta_rel, as_of_date), percentile_approx(delta_rel, 0.5) FROM {gold}.experiment_results",
    "SELECT count(*) FROM {gold}.experiment_results VERSION AS OF 0",
    "SELECT * FROM VALUES (1, 'a') AS v(x, y)",
    "SELECT explode(sequence(1, 3))",
    "SHOW SCHEMAS",
    "SHOW TABLES IN {silver}",
    "SHOW VIEWS IN {silver}",
    "SHOW FUNCTIONS",
    "SHOW TBLPROPERTIES {gold}.experiment_results",
    "SHOW COLUMNS IN {gold}.experiment_results",
    "DESCRIBE {gold}.experiment_results",
    "DESCRIBE TABLE EXTENDED {gold}.metric_values_daily",
    "DESCRIBE DETAIL {gold}.experiment_results",
    "DESCRIBE HISTORY {gold}.experiment_results",
    "DESCRIBE DATABASE {gold}",
    "DESCRIBE FUNCTION percentile_approx",
    "USE {gold}",
    "USE default",
]


@pytest.mark.parametrize("sql", ALLOWED, ids=[s[:50] for s in ALLOWED])
def test_reads_and_metadata_of_the_lake_pass(names, analyst, sql):
    analyst.execute(sql.format(**names))
    if analyst.description:
        analyst.fetchall()


def test_an_analyst_keeps_session_state_superset_does_not(names, analyst, superset_login):
    analyst.execute(f"USE {names['gold']}")
    analyst.execute("CREATE OR REPLACE TEMPORARY VIEW recent AS SELECT metric, as_of_date FROM experiment_results")
    analyst.execute("SELECT count(*) FROM recent")
    assert analyst.fetchall()[0][0] > 0
    analyst.execute("SET TIME ZONE 'Europe/Paris'")
    analyst.execute("SET spark.sql.session.timeZone")
    assert analyst.fetchall() == [("spark.sql.session.timeZone", "Europe/Paris")]
    analyst.execute("RESET spark.sql.session.timeZone")
    analyst.execute("DROP VIEW recent")
    for sql in ("CREATE TEMPORARY VIEW v AS SELECT 1", "SET TIME ZONE 'UTC'"):
        assert "not allowed for role superset" in _refusal(superset_login, sql)
    for sql in ("SET spark.sql.runSQLOnFiles=true", "SET -v", "RESET", "CREATE GLOBAL TEMPORARY VIEW g AS SELECT 1",
                f"CREATE VIEW {names['gold']}.v AS SELECT 1", f"DROP VIEW {names['silver']}.stg_telemetry__page_loads"):
        assert GUARD in _refusal(analyst, sql), sql  # fmt: skip


# --- the audit: refused for every login, and the host stays as it was -----------------------------

#: (statement, what the refusal names). {host} holds sentinel.txt and data/part-0.txt.
# fmt: off
REFUSED = [
    # code execution: Derby's engine through a JDBC data source (export, SQLJ.INSTALL_JAR, CALL)
    ("CREATE TEMPORARY VIEW j USING jdbc OPTIONS (url 'jdbc:derby:memory:q;create=true', dbtable 'SYSIBM.SYSDUMMY1', "
     "sessionInitStatement \"CALL SYSCS_UTIL.SYSCS_EXPORT_QUERY('VALUES 1', '{host}/exported', null, null, null)\")",
     OPTIONS),
    ("CREATE TEMPORARY VIEW j USING org.apache.spark.sql.execution.datasources.jdbc.JdbcRelationProvider "
     "OPTIONS (url 'jdbc:derby:memory:q;create=true', dbtable 'SYSIBM.SYSDUMMY1')", OPTIONS),
    ("CREATE TABLE {gold}.j USING jdbc OPTIONS (url 'jdbc:derby:memory:q;create=true', dbtable 'SYSIBM.SYSDUMMY1')", DDL),
    ("SELECT TRANSFORM('x') USING 'id'", "script transformation"),
    ("FROM {gold}.experiment_results SELECT TRANSFORM(metric) USING 'touch {host}/ran' AS (m)", "script transformation"),
    ("SELECT * FROM (SELECT TRANSFORM(1) USING 'id') t", "script transformation"),
    ("SELECT reflect('java.lang.Runtime', 'getRuntime')", "reflect()"),
    ("SELECT system.builtin.java_method('java.lang.Math', 'abs', -1)", "java_method()"),
    ("SELECT IDENTIFIER('try_reflect')('java.lang.Math', 'abs', -1)", "try_reflect()"),
    ("SELECT IDENTIFIER('refl' || 'ect')('java.lang.Math', 'abs', -1)", "IDENTIFIER() with a computed name"),
    ("WITH t AS (SELECT java_method('java.lang.Math', 'abs', -1) x) SELECT * FROM t", "java_method()"),
    ("CREATE TEMPORARY FUNCTION r AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFReflect'", "function creation"),
    ("CREATE FUNCTION {gold}.f AS 'x.Y' USING JAR '{host}/x.jar'", "function creation"),
    ("ADD JAR {host}/x.jar", "ADD JAR"),
    ("ADD FILE {host}/sentinel.txt", "ADD JAR"),
    ("EXECUTE IMMEDIATE 'SELECT 1'", "EXECUTE IMMEDIATE"),
    # host files read: data sources by path or by options
    ("SELECT * FROM csv.`/etc/passwd`", PATH),
    ("SELECT * FROM text.`file:///etc/passwd`", PATH),
    ("SELECT * FROM `TEXT`.`{host}/sentinel.txt`", PATH),
    ("SELECT * FROM spark_catalog.json.`{host}/sentinel.txt`", PATH),
    ("SELECT * FROM binaryFile.`{host}`", PATH),
    ("SELECT * FROM parquet.`{host}/data`", PATH),
    ("SELECT * FROM delta.`{host}`", PATH),
    ("SELECT * FROM IDENTIFIER('text.`/etc/passwd`')", PATH),
    ("CREATE TEMPORARY VIEW t USING text OPTIONS (path '{host}/sentinel.txt')", OPTIONS),
    ("CREATE TEMPORARY VIEW t AS SELECT * FROM text.`{host}/sentinel.txt`", PATH),
    ("SELECT * FROM {gold}.experiment_results WITH ('path' = '{host}')", "options on a relation"),
    ("SELECT * FROM table_changes_by_path('{host}', 0)", "table_changes_by_path()"),
    ("DESCRIBE DETAIL '{host}'", "a table given by path"),
    ("DESCRIBE HISTORY '{host}'", "a table given by path"),
    ("SELECT * FROM default.nothing_here", "the lake's schemas"),
    ("SHOW TABLES IN default", "the lake's schemas"),
    ("USE {other}", "USE switches to the lake's schemas"),
    ("SELECT * FROM {other}.http_transactions", "the lake's schemas"),
    # the password files, by every path above
    ("SELECT * FROM text.`{logins}`", PATH),
    ("SELECT * FROM csv.`{analyst_login}`", PATH),
    ("SELECT * FROM json.`{superset_login}`", PATH),
    ("SELECT * FROM binaryFile.`{derby}`", PATH),
    ("CREATE TEMPORARY VIEW p USING text OPTIONS (path '{derby}')", OPTIONS),
    ("LOAD DATA LOCAL INPATH '{logins}' INTO TABLE {bronze}.http_transactions", "LOAD DATA"),
    ("CREATE TABLE {gold}.p (line string) USING text LOCATION '{logins}'", DDL),
    # host files written, deleted or moved
    ("CREATE TABLE {gold}.w (a string) USING text LOCATION '{host}'", DDL),
    ("CREATE TABLE {gold}.d (a int) USING delta LOCATION '{host}/d'", DDL),
    ("CREATE TABLE delta.`{host}/d` (a int)", DDL),
    ("CREATE TABLE {gold}.c USING parquet LOCATION '{host}/c' AS SELECT 1 AS a", DDL),
    ("CREATE DATABASE x LOCATION '{host}/db'", DDL),
    ("INSERT OVERWRITE DIRECTORY '{host}' USING text SELECT 'x'", "INSERT OVERWRITE DIRECTORY"),
    ("INSERT OVERWRITE LOCAL DIRECTORY '{host}/out' SELECT 1", "INSERT OVERWRITE DIRECTORY"),
    ("INSERT INTO {gold}.experiment_results SELECT * FROM {gold}.experiment_results", "DML"),
    ("LOAD DATA INPATH '{host}/sentinel.txt' INTO TABLE {bronze}.http_transactions", "LOAD DATA"),
    ("LOAD DATA LOCAL INPATH '{host}/sentinel.txt' OVERWRITE INTO TABLE {bronze}.http_transactions", "LOAD DATA"),
    ("DELETE FROM delta.`{host}`", "DML"),
    ("VACUUM '{host}' RETAIN 0 HOURS", DDL),
    ("CONVERT TO DELTA parquet.`{host}/data`", DDL),
    ("CREATE TABLE {gold}.k SHALLOW CLONE delta.`{host}`", DDL),
    ("DROP TABLE {gold}.experiment_results", DDL),
    ("TRUNCATE TABLE {gold}.experiment_results", "DML"),
    ("ALTER TABLE {gold}.experiment_results SET LOCATION '{host}'", DDL),
    ("CACHE TABLE {gold}.experiment_results", "caching"),
    ("SET spark.sql.catalog.q=org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog", "SET spark.sql.catalog.q"),
    ("EXPLAIN SELECT * FROM text.`/etc/passwd`", "EXPLAIN"),
]
# fmt: on


@pytest.mark.parametrize(("sql", "named"), REFUSED, ids=[s[0][:60] for s in REFUSED])
def test_the_audit_is_refused_and_the_host_untouched(names, analyst, sql, named):
    host = Path(names["host"])
    before = _host_state(host)
    message = _refusal(analyst, sql.format(**names))
    assert GUARD in message and named in message, message[:600]
    assert "uid=" not in message and "a host file" not in message
    for secret in (names["logins"], names["analyst_login"], names["superset_login"], names["derby"]):
        values = [line.split("=", 1)[1] for line in Path(secret).read_text().splitlines()
                  if line.startswith(("password=", "derby.user.")) or ".pbkdf2=" in line]  # fmt: skip
        assert values and not any(value in message for value in values), secret
    assert _host_state(host) == before
    analyst.execute("SELECT 1")  # the session stays usable
    assert analyst.fetchall() == [(1,)]


def test_the_superset_login_is_refused_the_same(names, superset_login):
    sample = ("CREATE TEMPORARY VIEW j USING jdbc", "SELECT * FROM csv.", "SELECT * FROM text.`{logins}`",
              "LOAD DATA LOCAL INPATH '{logins}'", "CREATE TABLE {gold}.w", "SELECT TRANSFORM", "SELECT reflect")
    # the first case of the audit that starts with each sample
    cases = [next((sql, named) for sql, named in REFUSED if sql.startswith(prefix)) for prefix in sample]
    for sql, named in cases:
        message = _refusal(superset_login, sql.format(**names))
        assert GUARD in message and named in message, message[:600]


def test_xml_entities_read_no_file(names, analyst):
    analyst.execute(
        "SELECT xpath_string('<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY x SYSTEM \"file://{logins}\">]>"
        "<a>&x;</a>', 'a')".format(**names)
    )
    assert analyst.fetchall() == [("",)]


@pytest.mark.parametrize(
    "configuration",
    [
        {"set:hiveconf:spark.sql.runSQLOnFiles": "true"},
        {"set:hivevar:spark.sql.catalog.q": "org.apache.spark.sql.execution.datasources.v2.jdbc.JDBCTableCatalog",
         "set:hivevar:spark.sql.catalog.q.url": "jdbc:derby:memory:q;create=true"},
        {"set:hiveconf:spark.sql.scripting.enabled": "true"},
    ],
    ids=["runSQLOnFiles", "jdbc-catalog", "scripting"],
)  # fmt: skip
def test_options_a_client_sets_when_it_connects_refuse_its_statements(serving, configuration):
    from pyhive.exc import OperationalError

    with pytest.raises(OperationalError) as refused:  # pyhive runs USE `default` as it connects
        connect(serving.settings, "analyst", configuration=configuration).cursor().execute("SELECT 1")
    assert GUARD + "session options" in str(refused.value)


def test_every_function_is_classified_and_the_refused_ones_refused(analyst):
    rows = [line.split("\t") for line in FUNCTIONS.read_text().splitlines() if line and not line.startswith("#")]
    analyst.execute("SHOW FUNCTIONS")
    listed = {row[0] for row in analyst.fetchall()}
    unclassified = listed - {row[0] for row in rows}
    assert not unclassified, f"classify these in {FUNCTIONS.relative_to(REPO_ROOT)}: {sorted(unclassified)}"
    assert {row[0] for row in rows} - listed == set(), "functions.tsv names functions the server does not have"
    for name, verdict, _ in rows:
        if verdict == "refused":
            for sql in (f"SELECT {name}(1)", f"SELECT * FROM {name}(1)"):
                message = _refusal(analyst, sql)
                assert f"function {name}()" in message, message[:400]


def test_the_server_jvm_holds_no_derby_engine_and_no_other_jdbc_driver(serving, thrift):
    import psutil

    from quicexp.pidfile import read_pid

    paths = ThriftPaths.of(serving.settings)
    launcher = psutil.Process(read_pid(paths.pid_file))  # spark-submit, which execs java
    [jvm] = [p for p in [launcher, *launcher.children(recursive=True)] if p.name() == "java"]
    args = jvm.cmdline()
    classpath = args[args.index("-cp") + 1].split(os.pathsep)
    assert f"{paths.spark_home}/jars/*" in classpath, classpath
    assert not any("derby-10" in entry or "hive-jdbc" in entry or "postgresql" in entry for entry in classpath)
    jars = {p.name for p in (paths.spark_home / "jars").iterdir()}
    assert not any(name.startswith(("derby-", "hive-jdbc-")) for name in jars)
    opened = [f.path for f in jvm.open_files() if f.path.endswith(".jar")]
    assert opened and not any(Path(f).name.startswith(("derby-", "hive-jdbc-", "postgresql")) for f in opened)
