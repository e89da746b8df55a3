"""The Dagster resources: Hudi metadata (the sensors, observations and assets read it) and
a Hudi-ready Spark session (the assets run on it).

Both are bound to the one Settings value the definitions were built from
(`for_settings`): Dagster re-creates a resource from its config in every run, and a
class-level binding survives that where an instance attribute would not. Their config
fields (`lakehouse_root`, `master`, `remote`, `spark_config`) stay what a user may set in
the launchpad.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.execution.handoff import Handoffs
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.runtime.service_discovery import find_running_service
from freshness_pipeline.runtime.spark import build_spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class UnboundResource(RuntimeError):
    """A resource used without the settings it needs (build it with `for_settings`)."""


class _SettingsBound(ConfigurableResource):
    settings: ClassVar[Settings | None] = None

    @classmethod
    def for_settings(cls, settings: Settings, **config: Any) -> Self:
        """This resource, reading the lakehouse and services `settings` name."""
        bound = type(
            cls.__name__,
            (cls,),
            {"settings": settings, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )
        return bound(**config)

    def bound_settings(self) -> Settings:
        settings = type(self).settings
        if settings is None:
            raise UnboundResource(
                f"{type(self).__name__} has no settings: build it with "
                f"{type(self).__name__}.for_settings(settings)"
            )
        return settings


class HudiMetadataResource(_SettingsBound):
    """Reads timelines, commit metadata and file slices of the lakehouse's Hudi tables."""

    lakehouse_root: str | None = Field(
        default=None, description="Root URI of the Hudi tables (default FRESHNESS_LAKEHOUSE)."
    )

    def lakehouse(self) -> Lakehouse:
        settings = self.bound_settings()
        if self.lakehouse_root:
            return settings.lakehouse_at(self.lakehouse_root).with_inputs(settings.lakehouse.inputs)
        return settings.lakehouse

    def table_uri(self, table: str) -> str:
        return self.lakehouse().table_uri(table)

    def table(self, table: str) -> HudiTableMetadata:
        """Raises TableNotFound (naming the path) when the table does not exist yet."""
        return self.lakehouse().metadata(table)


class HudiSparkResource(_SettingsBound):
    """Gives assets a Hudi-ready SparkSession, created on first use.

    Defaults come from the settings (`FRESHNESS_SPARK_MASTER`, `FRESHNESS_SPARK_REMOTE`,
    `FRESHNESS_LAKEHOUSE`), so pointing the pipeline at a cluster needs no code change.
    """

    master: str | None = Field(default=None, description="Spark master URL (default local[*]).")
    remote: str | None = Field(
        default=None, description="Spark Connect URL, e.g. sc://host:15002; wins over master."
    )
    lakehouse_root: str | None = Field(
        default=None, description="Root URI of the Hudi tables (default ./.lakehouse/tables)."
    )
    spark_config: dict[str, Any] = Field(
        default_factory=dict, description="Extra Spark settings (executor sizes, S3A keys...)."
    )
    _session: Any = PrivateAttr(default=None)
    _discovery: Any = PrivateAttr(default=None)  # service_discovery.Discovery or None
    # the results the run's steps keep for the steps after them (execution/handoff.py); made
    # on first use, so each copy Dagster makes of the resource for a run has its own
    _handoffs: Any = PrivateAttr(default=None)
    _steps: int = PrivateAttr(default=0)  # steps of this run that started Spark work

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """A run given no Spark service (a hand `dagster asset materialize` beside the
        demo) uses the one the demo announced in the instance's folder, if it is alive and
        serves this lakehouse, instead of starting its own JVM (service_discovery.py)."""
        settings = self.bound_settings()
        if self.remote is not None or settings.spark_remote or settings.spark_mode != "service":
            return
        instance = getattr(context, "instance", None)
        if instance is None or not getattr(instance, "root_directory", None):
            return
        lakehouse = self.lakehouse_root or settings.lakehouse_root
        self._discovery = find_running_service(Path(instance.root_directory), lakehouse)

    def _remote(self) -> str | None:
        if self.remote is not None:
            return self.remote
        if self._discovery is not None and self._discovery.url:
            return self._discovery.url
        return self.bound_settings().spark_remote

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        # A shared service's cache outlives the run's session: the kept results go now.
        if self._session is not None and self._handoffs is not None:
            self._handoffs.release(self._session)

    @property
    def steps_before(self) -> int:
        """How many of this run's steps started Spark work before the current one (the
        run's later steps did not wait for a launch of their own)."""
        return self._steps

    def step_started(self) -> None:
        self._steps += 1

    @property
    def handoffs(self) -> Handoffs:
        if self._handoffs is None:
            self._handoffs = Handoffs()
        return self._handoffs

    @property
    def spark_session(self) -> SparkSession:
        if self._session is None:
            self._session = build_spark_session(
                self.bound_settings(),
                master=self.master,
                remote=self._remote(),
                extra={k: str(v) for k, v in self.spark_config.items()},
            )
        return self._session

    @property
    def description(self) -> str:
        """Where runs execute, for run metadata: the service URL or the Spark master, and
        for a run that looked for the demo's service, what it found."""
        remote = self._remote()
        found = f" ({self._discovery.reason})" if self._discovery is not None else ""
        if remote:
            return f"shared Spark service {remote}{found}"
        master = self.master or self.bound_settings().spark_master
        return f"own Spark driver, master {master}{found}"

    def table_uri(self, table: str) -> str:
        settings = self.bound_settings()
        if self.lakehouse_root:
            return settings.lakehouse_at(self.lakehouse_root).table_uri(table)
        return settings.table_uri(table)
