"""A lakehouse: a root location, the tables under it by name, and the declared input
tables that live elsewhere (hudi/inputs.py). Spelling a location is hudi/location.py's job."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from freshness_pipeline.hudi.commit_keys import ARRIVAL_COLUMN
from freshness_pipeline.hudi.location import Location, LocationError
from freshness_pipeline.hudi.metadata import HudiTableMetadata

if TYPE_CHECKING:
    from freshness_pipeline.hudi.inputs import DeclaredInput


@dataclass(frozen=True)
class Lakehouse:
    """The root of the tables and how to reach it, plus the declared input tables that
    live elsewhere (inputs.py): a declared input's location wins over the root."""

    root: Location
    # Folder of the writers' table locks (Hudi's FileSystemBasedLockProvider), one
    # sub-folder per table; None: each table's own `.hoodie` folder (local lakehouse).
    # An object store has no atomic create, so an S3 lakehouse keeps its locks on a file
    # system every writer shares (see docs/DEPLOY-objectstore.md).
    lock_dir: str | None = None
    inputs: Mapping[str, DeclaredInput] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(
        cls,
        uri: str,
        storage_options: Mapping[str, str] | None = None,
        lock_dir: str | None = None,
    ) -> Lakehouse:
        return cls(Location.parse(uri, storage_options), lock_dir)

    def lock_path(self, name: str) -> str | None:
        """Where writers of table `name` take their lock (None: Hudi's default, the
        table's own metadata folder)."""
        self.table(name)  # checks the name
        return posixpath.join(self.lock_dir, name) if self.lock_dir else None

    def with_inputs(self, inputs: Mapping[str, DeclaredInput]) -> Lakehouse:
        return Lakehouse(self.root, self.lock_dir, dict(inputs))

    def table(self, name: str) -> Location:
        if not name or "/" in name or name in (".", ".."):
            raise LocationError(f"{name!r} is not a table name")
        declared = self.inputs.get(name)
        return declared.location if declared is not None else self.root.child(name)

    def is_external(self, name: str) -> bool:
        """Whether someone other than this project writes the table."""
        declared = self.inputs.get(name)
        return declared is not None and declared.external

    def metadata(self, name: str) -> HudiTableMetadata:
        """The table's Hudi metadata reader, told its arrival column and whether it is
        ours. Raises hudi_metadata.TableNotFound (naming the path) when it does not exist."""
        declared = self.inputs.get(name)
        if declared is None:
            return HudiTableMetadata(self.table(name), ARRIVAL_COLUMN)
        return HudiTableMetadata(declared.location, declared.arrival_column, declared.external)

    def table_uri(self, name: str) -> str:
        """The table as Spark spells it (what runs read and write, and run configs name)."""
        return self.table(name).spark

    @property
    def uri(self) -> str:
        return self.root.spark
