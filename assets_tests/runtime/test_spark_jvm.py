"""What our Spark drivers run differently from a stock Spark: one pool of Kryo instances per
JVM (jvm/SharedPoolKryoSerializer.java), local file permissions by Java
(jvm/NioLocalFileSystem.java) and Hadoop configurations written for tasks without their
entries' sources (jvm/agent/HadoopConfSources.java). The settings, the configuration they
make, and each on a real JVM: the first two on the tests' own local Spark writing a real
Hudi table (whose driver runs the agent too), the agent on a small Java program."""

from __future__ import annotations

import os
import string
import subprocess
from pathlib import Path

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.write import raw_layout, write_options
from freshness_pipeline.runtime.spark import (
    JAVA_LOCAL_FS,
    LOCAL_FS_CONF,
    SHARED_POOL_SERIALIZER,
    find_agent_jar,
    hudi_spark_conf,
)

SPARK_KRYO = "org.apache.spark.serializer.KryoSerializer"


def _conf(env: dict[str, str], master: str = "local[2]") -> dict[str, str]:
    settings = load_settings(env)
    return hudi_spark_conf(settings, master, settings.jars_dir)


def test_by_default_a_driver_pools_kryo_per_jvm_and_sets_permissions_by_java():
    conf = _conf({})
    assert conf["spark.serializer"] == SHARED_POOL_SERIALIZER
    assert conf[LOCAL_FS_CONF] == JAVA_LOCAL_FS
    # the launcher lists the jars through the file system before they are on the classpath
    assert conf["spark.driver.extraClassPath"].endswith("freshness-spark-jvm.jar")
    agent = f"-javaagent:{find_agent_jar(load_settings({}).jars_dir)}=hadoop-conf"
    assert agent in conf["spark.driver.extraJavaOptions"].split()


def test_spark_and_hadoop_as_they_come_when_asked():
    conf = _conf(
        {
            "FRESHNESS_SPARK_KRYO_POOL": "spark",
            "FRESHNESS_SPARK_LOCAL_FS": "hadoop",
            "FRESHNESS_SPARK_CONF_SOURCES": "hadoop",
        }
    )
    assert conf["spark.serializer"] == SPARK_KRYO
    assert LOCAL_FS_CONF not in conf and "spark.driver.extraClassPath" not in conf
    assert "-javaagent" not in conf["spark.driver.extraJavaOptions"]


def test_a_cluster_keeps_hadoops_local_file_system():
    """A cluster's executors start before they fetch our jars: the file system class would
    not be there."""
    conf = _conf({}, master="spark://127.0.0.1:7077")
    assert LOCAL_FS_CONF not in conf and "spark.driver.extraClassPath" not in conf
    assert conf["spark.serializer"] == SHARED_POOL_SERIALIZER  # travels with the tasks


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FRESHNESS_SPARK_KRYO_POOL", "per-task"),
        ("FRESHNESS_SPARK_LOCAL_FS", "native"),
        ("FRESHNESS_SPARK_CONF_SOURCES", "keep"),
    ],
)
def test_an_unknown_choice_is_refused_with_its_setting(name: str, value: str):
    with pytest.raises(SettingsError, match=name):
        load_settings({name: value})


def _created(spark) -> int:
    jvm = spark.sparkContext._jvm
    return int(jvm.io.freshness.spark.SharedPoolKryoSerializer.created())


@pytest.mark.spark
def test_shuffle_tasks_borrow_kryo_instances_the_jvm_already_built(spark, tmp_path: Path):
    """Two inserts into a raw table of 26 partitions: each shuffles its rows to one task
    per partition, which with Spark's own pool built its Kryo instances anew. The second
    builds next to none: the tasks' deserialized serializers borrow from the JVM's pool
    (the session's JVM has run other tests' writes before, so the first may build none)."""
    jvm = spark.sparkContext._jvm
    env_serializer = jvm.org.apache.spark.SparkEnv.get().serializer()
    assert env_serializer.getClass().getName() == SHARED_POOL_SERIALIZER
    # what Hudi's writer checks before it writes: Spark's Kryo serializer by name
    assert spark.sparkContext.getConf().get("spark.serializer") == SPARK_KRYO
    path = str(tmp_path / "price_raw")

    def insert(start: int) -> None:
        rows = spark.range(start, start + 520).selectExpr(
            "concat('e', id) AS event_id",
            f"substr('{string.ascii_uppercase}', CAST(id % 26 AS INT) + 1, 1) AS symbol_prefix",
            "current_timestamp() AS arrival_ts",
            "id AS price",
        )
        options = write_options(raw_layout("price_raw"), "insert")
        rows.write.format("hudi").options(**options).mode("append").save(path)

    insert(0)  # fills the pool, if the tests before left it short
    before = _created(spark)
    insert(520)
    # With Spark's own pool every map task builds one per partition it writes to (26 each,
    # a few map tasks). From the JVM's pool only what more tasks hold at once than ever
    # before: 0-1 in a fresh JVM, up to 7 seen after other tests' writes.
    assert _created(spark) - before < 26
    assert spark.read.format("hudi").load(path).count() == 1040


@pytest.mark.spark
def test_local_file_permissions_are_read_and_set_by_java(spark, tmp_path: Path):
    jvm = spark.sparkContext._jvm
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    target = tmp_path / "file.txt"
    target.write_text("x")
    path = jvm.org.apache.hadoop.fs.Path(target.as_uri())
    fs = path.getFileSystem(hadoop)
    assert fs.getClass().getName() == JAVA_LOCAL_FS
    os.chmod(target, 0o640)
    assert fs.getFileStatus(path).getPermission().toShort() == 0o640
    listed = fs.listStatus(jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri()))
    modes = {s.getPath().getName(): s.getPermission().toShort() for s in listed}
    assert modes[target.name] == 0o640
    before = jvm.io.freshness.hadoop.NioLocalFileSystem.Raw.permissionsSet()
    fs.setPermission(path, jvm.org.apache.hadoop.fs.permission.FsPermission(0o604))
    assert os.stat(target).st_mode & 0o777 == 0o604
    assert jvm.io.freshness.hadoop.NioLocalFileSystem.Raw.permissionsSet() == before + 1
    assert fs.getFileStatus(path).getOwner() == Path(target).owner()
    missing = jvm.org.apache.hadoop.fs.Path((tmp_path / "gone").as_uri())
    with pytest.raises(Exception, match="FileNotFoundException"):
        fs.setPermission(missing, jvm.org.apache.hadoop.fs.permission.FsPermission(0o600))


@pytest.mark.spark
def test_pools_are_kept_for_the_recent_class_loaders_only(spark):
    """A pooled Kryo instance holds its class loader: a Spark Connect server's sessions each
    bring one, so pools of loaders long unused are dropped, never more than eight kept."""
    jvm = spark.sparkContext._jvm
    thread = jvm.java.lang.Thread.currentThread()
    own = thread.getContextClassLoader()
    serializer = jvm.org.apache.spark.SparkEnv.get().serializer()
    no_urls = spark.sparkContext._gateway.new_array(jvm.java.net.URL, 0)
    try:
        for _ in range(20):
            thread.setContextClassLoader(jvm.java.net.URLClassLoader(no_urls, own))
            serializer.pool()
    finally:
        thread.setContextClassLoader(own)
    serializer.pool()
    assert jvm.io.freshness.spark.SharedPoolKryoSerializer.pools() <= 8


# Writes a driver-like Hadoop configuration (every default resource loaded, entries set
# programmatically) as a task's closure carries it, reads it back as a task does, and
# prints the size written and whether every entry came back with its value.
CONF_PROBE = """
import java.io.*;
import java.util.*;
import org.apache.hadoop.conf.Configuration;
public class ConfProbe {
  public static void main(String[] a) throws Exception {
    Configuration conf = new Configuration();
    conf.addResource("hdfs-default.xml");
    conf.set("fs.file.impl.disable.cache", "true");
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    conf.write(new DataOutputStream(bytes));
    Configuration read = new Configuration(false);
    read.readFields(new DataInputStream(new ByteArrayInputStream(bytes.toByteArray())));
    boolean same = conf.size() == read.size();
    for (Map.Entry<String, String> e : conf) same &= e.getValue().equals(read.getRaw(e.getKey()));
    System.out.println(conf.size() + " " + bytes.size() + " " + same);
  }
}
"""


def _conf_probe(tmp_path: Path, *java_options: str) -> tuple[int, int, bool, str]:
    import pyspark

    (tmp_path / "ConfProbe.java").write_text(CONF_PROBE)
    jars = Path(pyspark.__file__).parent / "jars" / "*"
    done = subprocess.run(
        ["java", *java_options, "-cp", str(jars), "ConfProbe.java"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    )
    entries, size, same = done.stdout.split()
    return int(entries), int(size), same == "true", done.stderr


def test_a_configuration_is_written_without_its_sources_and_read_back_whole(tmp_path: Path):
    """Hadoop's own format either way (a JVM without the agent reads it); with the agent
    no entry carries the gzip streams of its source file names."""
    agent = f"-javaagent:{find_agent_jar(load_settings({}).jars_dir)}=hadoop-conf"
    entries, hadoops, same, _ = _conf_probe(tmp_path)
    assert same and entries > 300  # core-default.xml alone has about 330
    entries_agent, ours, same_agent, stderr = _conf_probe(tmp_path, agent)
    assert same_agent and entries_agent == entries
    assert "HadoopConfSources" not in stderr  # the call was found and rewritten
    # an entry's sources took an int and a gzip stream (about 30 bytes); now the int alone
    assert ours < hadoops - 20 * entries, (ours, hadoops, entries)
