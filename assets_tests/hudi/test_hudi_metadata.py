"""The metadata module against real Hudi tables written by Spark, with Hudi's own Spark
procedures (show_commits, show_commit_files, show_fsview_latest) as the oracle."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from freshness_pipeline.hudi.commit_keys import ARRIVAL_MAX_KEY, ARRIVAL_MIN_KEY, WATERMARK_KEY
from freshness_pipeline.hudi.footers import footer_arrival_range
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.write import TableLayout, write_options

pytestmark = pytest.mark.spark

BASE_US = 1_800_000_000_000_000
LAYOUT = TableLayout("meta_probe", "key", "arrival_ts", "part")


def us_to_dt(us: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(us / 1e6, tz=dt.UTC)


def write(spark, path, rows, operation="upsert", arrival=None, extra=None):
    """rows: (key, part, value, arrival_us). Records the arrival range like our writers do."""
    df = spark.createDataFrame(
        [(k, p, v, us_to_dt(a)) for k, p, v, a in rows],
        "key string, part string, value long, arrival_ts timestamp",
    )
    arrivals = [a for *_, a in rows]
    meta = {
        ARRIVAL_MIN_KEY: min(arrivals),
        ARRIVAL_MAX_KEY: max(arrivals),
        WATERMARK_KEY: max(arrivals),
    }
    options = write_options(LAYOUT, operation, meta)
    options.update(extra or {})
    df.write.format("hudi").options(**options).mode("append").save(path)


@pytest.fixture(scope="module")
def probe_table(spark, tmp_path_factory):
    """Five commits: inserts over three partitions, upserts, an insert_overwrite
    (replacecommit) of one partition, with the cleaner keeping one version."""
    path = str(tmp_path_factory.mktemp("meta") / "meta_probe")
    keep_one = {
        "hoodie.clean.commits.retained": "1",
        "hoodie.keep.min.commits": "10",
        "hoodie.keep.max.commits": "12",
    }
    t = BASE_US
    write(
        spark,
        path,
        [(f"k{i}", "abc"[i % 3], i, t + i) for i in range(30)],
        "insert",
        extra=keep_one,
    )
    write(
        spark,
        path,
        [(f"k{i}", "abc"[i % 3], 100 + i, t + 1000 + i) for i in range(0, 30, 3)],
        extra=keep_one,
    )  # only partition a
    write(
        spark,
        path,
        [(f"k{i}", "abc"[i % 3], 200 + i, t + 2000 + i) for i in range(1, 30, 3)],
        extra=keep_one,
    )  # only partition b
    write(
        spark,
        path,
        [(f"n{i}", "c", i, t + 3000 + i) for i in range(5)],
        "insert_overwrite",
        extra=keep_one,
    )  # replaces partition c
    write(
        spark,
        path,
        [(f"k{i}", "abc"[i % 3], 300 + i, t + 4000 + i) for i in range(0, 30, 3)],
        extra=keep_one,
    )  # a again: the first versions of a get cleaned
    name = f"meta_probe_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    return path, name


def test_commits_match_show_commits(spark, probe_table):
    path, name = probe_table
    ours = HudiTableMetadata(path).commits()
    assert [c.operation for c in ours] == [
        "INSERT",
        "UPSERT",
        "UPSERT",
        "INSERT_OVERWRITE",
        "UPSERT",
    ]
    assert [c.action for c in ours] == ["commit"] * 3 + ["replacecommit", "commit"]
    shown = {
        r["commit_time"]: r
        for r in spark.sql(f"call show_commits(table => '{name}', limit => 100)").collect()
    }
    assert set(shown) == {c.instant for c in ours}
    for commit in ours:
        row = shown[commit.instant]
        assert row["total_records_written"] == sum(w.num_writes for w in commit.written)
        assert row["total_bytes_written"] == sum(w.size_bytes for w in commit.written)
        assert row["total_files_added"] + row["total_files_updated"] == len(commit.written)
    # completion-time order, and every completion at or after its instant
    assert [c.completion for c in ours] == sorted(c.completion for c in ours)
    assert all(c.completion >= c.instant for c in ours)


def test_written_files_match_show_commit_files(spark, probe_table):
    path, name = probe_table
    for commit in HudiTableMetadata(path).commits():
        rows = spark.sql(
            f"call show_commit_files(table => '{name}', instant_time => '{commit.instant}')"
        ).collect()
        theirs = {(r["partition_path"], r["file_id"]): r for r in rows}
        ours = {(w.partition, w.file_id): w for w in commit.written}
        assert set(theirs) == set(ours)
        for key, w in ours.items():
            assert theirs[key]["total_records_written"] == w.num_writes
            assert theirs[key]["total_records_updated"] == w.num_update_writes


def test_latest_slices_match_show_fsview_latest(spark, probe_table):
    path, name = probe_table
    ours = HudiTableMetadata(path).latest_file_slices()
    theirs = set()
    for part in "abc":
        for r in spark.sql(
            f"call show_fsview_latest(table => '{name}', partition_path => '{part}')"
        ).collect():
            theirs.add((r["partition"], r["file_id"], r["base_instant"], r["data_file_size"]))
    assert {(s.partition, s.file_id, s.base_instant, s.size_bytes) for s in ours} == theirs
    # the replaced file group of partition c is gone; the cleaned versions are not listed
    for s in ours:
        assert s.path.split("/")[-1].endswith(f"_{s.base_instant}.parquet")


def test_cleaner_removed_old_versions_that_the_timeline_still_names(probe_table):
    path, _ = probe_table
    commits = HudiTableMetadata(path).commits()
    first_paths = [w.path for w in commits[0].written if w.partition == "a"]
    import os

    assert first_paths and not any(os.path.exists(f"{path}/{p}") for p in first_paths)


def test_watermark_is_the_newest_commit_watermark(probe_table):
    path, _ = probe_table
    assert HudiTableMetadata(path).watermark_us() == BASE_US + 4000 + 27


def test_pending_files_follow_the_commits_after_t_done(spark, probe_table):
    path, name = probe_table
    meta = HudiTableMetadata(path)
    commits = meta.commits()
    latest = {s.file_id: s for s in meta.latest_file_slices()}
    # independently: the latest file groups written by commits whose arrivals exceed t_done
    for t_done in (
        None,
        BASE_US + 29,
        BASE_US + 1500,
        BASE_US + 2500,
        BASE_US + 3500,
        BASE_US + 4027,
    ):
        expected = set()
        for commit in commits:
            hi = commit.arrival_range_us[1]
            if t_done is not None and hi <= t_done:
                continue
            rows = spark.sql(
                f"call show_commit_files(table => '{name}', instant_time => '{commit.instant}')"
            ).collect()
            expected |= {r["file_id"] for r in rows if r["file_id"] in latest}
        pending = meta.pending_files(t_done, with_footer=True)
        assert {p.slice.file_id for p in pending} == expected
        completed = {c.instant: meta.completion_us(c) for c in commits}
        for p in pending:
            assert t_done is None or p.pending_min_us > t_done
            assert p.pending_min_us <= p.pending_max_us
            # the aging clock: when the oldest of its pending commits completed
            assert p.pending_since_us == min(completed[i] for i in p.pending_commits)
    # partition a after t_done = 2500: only the last upsert is pending for it
    a_files = [p for p in meta.pending_files(BASE_US + 2500) if p.slice.partition == "a"]
    assert a_files and all(p.pending_min_us == BASE_US + 4000 for p in a_files)


def test_footer_range_matches_a_data_scan(spark, probe_table):
    path, _ = probe_table
    meta = HudiTableMetadata(path)
    for s in meta.latest_file_slices():
        uri = meta.file_uri(s.path)
        low, high = footer_arrival_range(uri)
        row = (
            spark.read.parquet(uri)
            .selectExpr("min(unix_micros(arrival_ts)) lo", "max(unix_micros(arrival_ts)) hi")
            .first()
        )
        assert (low, high) == (row["lo"], row["hi"])


def test_clustering_hands_pending_ranges_to_the_new_file_groups(spark, tmp_path):
    path = str(tmp_path / "clustered")
    bulk = {"hoodie.bulkinsert.sort.mode": "NONE"}
    t = BASE_US
    write(spark, path, [(f"a{i}", "a", i, t + i) for i in range(20)], "bulk_insert", extra=bulk)
    write(
        spark, path, [(f"b{i}", "a", i, t + 100 + i) for i in range(20)], "bulk_insert", extra=bulk
    )
    before = HudiTableMetadata(path)
    t_done = BASE_US + 19  # the first commit is consumed, the second is pending
    pending_before = before.pending_files(t_done)
    second_groups = {w.file_id for w in before.commits()[1].written}
    assert {p.slice.file_id for p in pending_before} == second_groups
    spark.sql(f"call run_clustering(path => '{path}', order => 'arrival_ts')").collect()

    after = HudiTableMetadata(path)
    assert after.commits()[-1].action == "replacecommit"
    assert after.commits()[-1].arrival_range_us is None  # clustering writes no arrival keys
    pending = after.pending_files(t_done, with_footer=True)
    assert pending, "the clustered file holds the pending rows and must stay pending"
    assert not ({p.slice.file_id for p in pending} & second_groups)
    for p in pending:
        assert (p.pending_min_us, p.pending_max_us) == (BASE_US + 100, BASE_US + 119)
        assert after.commits()[-1].instant in p.pending_commits
        # pending since the commit that wrote the rows, not the clustering that moved them
        assert p.pending_since_us == after.completion_us(after.commits()[1])
        # the whole-file footer (published mode) also sees the consumed rows
        assert p.footer_min_us <= BASE_US + 19
    # nothing is pending for a consumer that has seen everything
    assert after.pending_files(BASE_US + 119) == []


def test_warm_snapshots_come_from_the_caches_and_see_new_commits(spark, tmp_path, monkeypatch):
    """A second snapshot of an unchanged table reads no commit metadata and no slices
    through hudi-rs (one directory listing), and is equal to the cold one; after a new
    commit only that commit's metadata is parsed."""
    from freshness_pipeline.hudi import metadata as hm

    path = str(tmp_path / "meta_probe")
    t = BASE_US
    write(spark, path, [(f"k{i}", "ab"[i % 2], i, t + i) for i in range(10)], "insert")
    write(spark, path, [(f"k{i}", "a", 50 + i, t + 100 + i) for i in range(0, 10, 2)])
    cold = HudiTableMetadata(path)
    cold_view = (cold.commits(), cold.latest_file_slices(), cold.pending_files(None))

    def no_hudi_rs(self):
        raise AssertionError("a warm snapshot went to hudi-rs")

    with monkeypatch.context() as patch:
        patch.setattr(HudiTableMetadata, "_hudi", no_hudi_rs)
        warm = HudiTableMetadata(path)
        assert (warm.commits(), warm.latest_file_slices(), warm.pending_files(None)) == cold_view

    parsed = []
    real_from_json = hm.commit_from_json
    monkeypatch.setattr(
        hm, "commit_from_json", lambda *a: parsed.append(a[0]) or real_from_json(*a)
    )
    write(spark, path, [(f"k{i}", "b", 70 + i, t + 200 + i) for i in range(1, 10, 2)])
    after = HudiTableMetadata(path)
    assert len(after.commits()) == 3 and after.watermark_us() == t + 209
    assert parsed == [after.commits()[-1].instant]
    assert after.latest_file_slices() != cold_view[1]  # partition b got a new version
    # The table's newest listing replaced the old one: one slice-cache entry per table.
    entries = [k for k in hm.SLICE_CACHE._items if path in (k if isinstance(k, tuple) else (k,))]
    assert entries == [path]
    assert hm.SLICE_CACHE.get(path)[1] == after.latest_file_slices()


def _no_listing(self):
    raise AssertionError("pending files listed the whole table")


def test_written_slices_are_the_latest_listing(probe_table):
    """Every group of the probe table was written by an active commit, so the slices built
    from commit metadata alone must be exactly hudi-rs's latest slices: upserted groups at
    their newest version, the insert_overwrite's replaced groups gone."""
    path, _ = probe_table
    meta = HudiTableMetadata(path)
    written = meta.written_slices()
    assert set(written.values()) == set(meta.latest_file_slices())
    assert meta.replaced_file_ids() and not (meta.replaced_file_ids() & {fid for _, fid in written})
    for s in meta.latest_file_slices():
        assert meta.latest_slice(s.file_id) == s
    for fid in meta.replaced_file_ids():
        assert meta.latest_slice(fid) is None


def test_pending_files_come_from_commit_metadata_alone(probe_table, monkeypatch):
    """With no archived commit, pending files never need the table's full listing (whose
    size grows with every raw commit), and are the same as with it."""
    path, _ = probe_table
    t_dones = (None, BASE_US + 29, BASE_US + 1500, BASE_US + 2500, BASE_US + 3500, BASE_US + 4027)
    listed = HudiTableMetadata(path)
    latest = set(listed.latest_file_slices())
    expected = {t: listed.pending_files(t, with_footer=True) for t in t_dones}
    monkeypatch.setattr(HudiTableMetadata, "_read_file_slices", _no_listing)
    for t_done in t_dones:
        pending = HudiTableMetadata(path).pending_files(t_done, with_footer=True)
        assert pending == expected[t_done]
        assert {p.slice for p in pending} <= latest


def test_archived_commits_fall_back_to_the_listing_only_when_they_may_be_pending(
    spark, tmp_path, monkeypatch
):
    """Archival moves old instants (and their write stats) off the active timeline. A
    consumer older than every active commit gets every group, the archived writers' groups
    by footer range; one that has consumed the oldest active commit gets the groups of the
    newer active commits, without a listing."""
    from freshness_pipeline.hudi import metadata as hm

    path = str(tmp_path / "archived")
    archive_fast = {
        "hoodie.clean.commits.retained": "1",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
    }
    for i in range(6):  # one new partition, so one new file group, per commit
        rows = [(f"k{i}_{j}", f"p{i}", j, BASE_US + 1000 * i + j) for j in range(5)]
        write(spark, path, rows, "insert", extra=archive_fast)
        if i == 1:
            first_two = {(c.instant, c.completion) for c in HudiTableMetadata(path).commits()}
    meta = HudiTableMetadata(path)
    assert meta.has_archived_commits()
    active = meta.commits()
    assert 0 < len(active) < 6
    # The commit cache holds the active timeline, not every instant it ever saw.
    assert set(hm.COMMIT_CACHE.get(path)) == {(c.instant, c.completion) for c in active}
    assert first_two - set(hm.COMMIT_CACHE.get(path))
    latest = meta.latest_file_slices()
    assert len(latest) == 6
    archived_groups = {s.file_id for s in latest} - {fid for _, fid in meta.written_slices()}
    assert archived_groups, "some groups are named only by archived commits"

    everything = meta.pending_files(None)
    assert {p.slice for p in everything} == set(latest)
    for p in everything:
        if p.slice.file_id in archived_groups:
            assert (p.pending_min_us, p.pending_max_us) == footer_arrival_range(p.uri)

    t_done = active[0].arrival_range_us[1]
    monkeypatch.setattr(HudiTableMetadata, "_read_file_slices", _no_listing)
    newer = HudiTableMetadata(path).pending_files(t_done)
    assert {p.slice.file_id for p in newer} == {w.file_id for c in active[1:] for w in c.written}
    with pytest.raises(AssertionError, match="listed the whole table"):
        HudiTableMetadata(path).pending_files(None)


def test_a_clustering_run_archives_what_ingestion_left(spark, tmp_path):
    """A clustered raw table's ingestion archives only at its far backstop; the clustering
    run's `archive_timeline` (Hudi's archive_commits procedure) archives it down to the
    horizon, and the table's pending files are still all there."""
    from freshness_pipeline.execution.clustering_exec import archive_timeline
    from freshness_pipeline.hudi.write import ingestion_archival_options

    path = str(tmp_path / "clustered_raw")
    ingestion = {**ingestion_archival_options(True), "hoodie.clean.commits.retained": "1"}
    for i in range(6):
        rows = [(f"k{i}_{j}", f"p{i}", j, BASE_US + 1000 * i + j) for j in range(5)]
        write(spark, path, rows, "insert", extra=ingestion)
    before = HudiTableMetadata(path)
    assert not before.has_archived_commits()
    assert len(before.commits()) == 6
    everything = {p.slice for p in before.pending_files(None)}

    archive_timeline(spark, path, keep_min=2, keep_max=3, clean_retained=1)
    after = HudiTableMetadata(path)
    assert after.has_archived_commits()
    assert 2 <= len(after.commits()) < 6
    assert [c.instant for c in after.commits()] == [c.instant for c in before.commits()][
        -len(after.commits()) :
    ]
    assert {p.slice for p in after.pending_files(None)} == everything
