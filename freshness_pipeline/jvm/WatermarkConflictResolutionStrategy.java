package io.freshness.hudi;

import java.util.List;
import java.util.Map;

import org.apache.hudi.common.table.timeline.HoodieInstant;
import org.apache.hudi.common.table.timeline.HoodieTimeline;

/**
 * A stale plan never commits.
 *
 * <p>A freshness job run plans from its target's watermark t_done, computes rows for arrivals in
 * (t_done, u] and commits them with watermark u. If another run committed in between (a hand
 * materialize beside a sensor run, a replayed config), committing would count that window twice.
 * Hudi calls this strategy under the table's write lock, after the data files are written and
 * before the commit completes, so the check and the commit are one atomic step: the run commits
 * only if the table's current watermark (the newest completed commit carrying
 * {@code freshness.watermark_us}) is still the {@code freshness.t_done_before_us} the run wrote in
 * its own extra metadata. Otherwise it fails with a {@link HoodieWriteConflictException} whose
 * message starts with {@code STALE_PLAN}, and Hudi rolls the write back.
 *
 * <p>Commits without {@code freshness.t_done_before_us} (ingestion, table services) get Hudi's
 * usual file-level check, which this strategy also applies to job runs.
 */
public class WatermarkConflictResolutionStrategy extends FenceConflictResolutionStrategy {

  public static final String WATERMARK_KEY = "freshness.watermark_us";
  public static final String T_DONE_BEFORE_KEY = "freshness.t_done_before_us";

  private String watermarkInstantTime;
  private String currentWatermark;

  @Override
  protected HoodieInstant fenceInstant(HoodieTimeline completed) {
    HoodieInstant latest = newestWith(completed, List.of(WATERMARK_KEY));
    watermarkInstantTime = latest == null ? null : latest.requestedTime();
    currentWatermark = latest == null ? null : extraOf(completed, latest).get(WATERMARK_KEY);
    return latest;
  }

  @Override
  protected String stale(Map<String, String> thisExtra) {
    String planned = thisExtra.get(T_DONE_BEFORE_KEY);
    if (planned == null) {
      return null; // not a job run's commit: Hudi's file-level check alone
    }
    // An empty t_done_before means the run planned on a table with no watermark yet.
    return unlessCurrent(
        planned,
        currentWatermark,
        watermarkInstantTime,
        "STALE_PLAN: run planned from t_done_us=",
        " but the table's watermark is now ",
        "no window is counted twice");
  }
}
