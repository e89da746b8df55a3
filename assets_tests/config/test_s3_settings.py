"""S3 settings, storage options, s3a configuration and lock locations (pure, no server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.write import guarded_writer_options

S3_ENV = {
    "FRESHNESS_LAKEHOUSE": "s3://bucket/tables",
    "FRESHNESS_S3_ENDPOINT": "http://127.0.0.1:9000",
    "FRESHNESS_S3_PATH_STYLE": "true",
    "AWS_ACCESS_KEY_ID": "key-id-123",
    "AWS_SECRET_ACCESS_KEY": "very-secret-456",
}


def test_s3_settings_reach_every_reader_without_showing_the_secret():
    settings = load_settings(S3_ENV)
    options = settings.lakehouse.table("trade_raw").storage_options
    assert options["aws_endpoint_url"] == "http://127.0.0.1:9000"
    assert options["aws_allow_http"] == "true"
    assert options["aws_virtual_hosted_style_request"] == "false"
    assert options["aws_secret_access_key"] == "very-secret-456"
    assert settings.lakehouse.table("trade_raw").hudi_rs == "s3://bucket/tables/trade_raw"
    conf = settings.s3.spark_conf()
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    for shown in (repr(settings), repr(settings.lakehouse), str(conf)):
        assert "very-secret-456" not in shown and "key-id-123" not in shown


def test_without_keys_the_standard_chain_is_used():
    env = {k: v for k, v in S3_ENV.items() if not k.startswith("AWS_")}
    settings = load_settings(env)
    options = settings.lakehouse.root.storage_options
    assert "aws_access_key_id" not in options and "aws_secret_access_key" not in options
    assert (
        "DefaultAWSCredentialsProviderChain"
        in (settings.s3.spark_conf()["spark.hadoop.fs.s3a.aws.credentials.provider"])
    )


def test_half_a_key_pair_is_refused():
    with pytest.raises(SettingsError, match="set together"):
        load_settings({**S3_ENV, "AWS_SECRET_ACCESS_KEY": ""})


def test_bad_endpoint_is_refused_naming_the_variable():
    with pytest.raises(SettingsError, match="FRESHNESS_S3_ENDPOINT='localhost:9000'"):
        load_settings({**S3_ENV, "FRESHNESS_S3_ENDPOINT": "localhost:9000"})


def test_locks_of_an_s3_lakehouse_are_on_a_local_folder(tmp_path: Path):
    settings = load_settings(S3_ENV)
    assert settings.lakehouse.lock_path("trade_aggr") == str(
        PROJECT_ROOT / ".lakehouse" / "locks" / "trade_aggr"
    )
    chosen = load_settings({**S3_ENV, "FRESHNESS_LOCK_DIR": str(tmp_path)})
    options = guarded_writer_options(chosen.lakehouse.lock_path("trade_aggr"))
    assert options["hoodie.write.lock.filesystem.path"] == f"file://{tmp_path}/trade_aggr"


def test_a_local_lakehouse_keeps_its_locks_in_each_table(tmp_path: Path):
    settings = load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path)})
    assert settings.lakehouse.lock_path("trade_aggr") is None
    assert "hoodie.write.lock.filesystem.path" not in guarded_writer_options(None)
    assert settings.s3.spark_conf()  # built, but only used for an S3 lakehouse


def test_spark_service_command_reaches_s3_without_keys_on_its_command_line(tmp_path: Path):
    from freshness_pipeline.runtime.spark_service import SparkServiceConfig, server_command

    settings = load_settings({**S3_ENV, "FRESHNESS_JARS_DIR": str(load_settings().jars_dir)})
    argv = server_command(SparkServiceConfig(settings, tmp_path))
    line = " ".join(argv)
    assert "hadoop-aws-3.3.4.jar" in line and "aws-java-sdk-bundle-1.12.262.jar" in line
    assert "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9000" in line
    assert "very-secret-456" not in line and "key-id-123" not in line
    local = load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")})
    local_line = " ".join(server_command(SparkServiceConfig(local, tmp_path)))
    assert "hadoop-aws" not in local_line and "fs.s3a" not in local_line
