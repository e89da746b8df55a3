package io.freshness.hudi;

import java.util.List;
import java.util.Map;

import org.apache.hudi.common.table.timeline.HoodieInstant;
import org.apache.hudi.common.table.timeline.HoodieTimeline;

/**
 * An ingested batch commits once.
 *
 * <p>An ingestion commit reads its batch from the table's checkpoint (its position in the
 * landing folder or in Kafka) and writes the batch's end as the new checkpoint. It carries
 * {@code freshness.checkpoint_before}, the checkpoint it read from. Hudi calls this strategy
 * under the table's write lock, after the data files are written and before the commit
 * completes: the commit goes ahead only if the newest completed commit carrying its checkpoint
 * key still holds that checkpoint. Two ingestors that read the same batch (one killed while a
 * shared Spark server finishes its write, and its restart) cannot both commit it: the loser
 * fails with a {@link HoodieWriteConflictException} whose message starts with {@code
 * STALE_CHECKPOINT}, Hudi rolls its write back, and it reads on from the new checkpoint.
 *
 * <p>Hudi's usual file-level check applies too (a clustering of the raw table beside it).
 */
public class CheckpointConflictResolutionStrategy extends FenceConflictResolutionStrategy {

  public static final String CHECKPOINT_BEFORE_KEY = "freshness.checkpoint_before";
  // Where ingestion keeps its source position: the landing folder's, Kafka's (Hudi's own key).
  public static final List<String> CHECKPOINT_KEYS =
      List.of("freshness.landing_checkpoint", "streamer.checkpoint.key.v2");

  private String checkpointInstantTime;
  private Map<String, String> currentCheckpoints = Map.of();

  @Override
  protected HoodieInstant fenceInstant(HoodieTimeline completed) {
    // A raw table's newest commits are ingestion's (clusterings between them): the scan
    // stops at the first one that carries a checkpoint.
    HoodieInstant latest = newestWith(completed, CHECKPOINT_KEYS);
    checkpointInstantTime = latest == null ? null : latest.requestedTime();
    currentCheckpoints = latest == null ? Map.of() : extraOf(completed, latest);
    return latest;
  }

  @Override
  protected String stale(Map<String, String> thisExtra) {
    String before = thisExtra.get(CHECKPOINT_BEFORE_KEY);
    if (before == null) {
      return null; // not an ingestion commit: Hudi's file-level check alone
    }
    String key = CHECKPOINT_KEYS.stream().filter(thisExtra::containsKey).findFirst().orElse(null);
    String current = key == null ? null : currentCheckpoints.get(key);
    // An empty checkpoint_before: the batch was read from a table with no checkpoint yet.
    return unlessCurrent(
        before,
        current,
        checkpointInstantTime,
        "STALE_CHECKPOINT: ingestion read its batch from checkpoint ",
        " but the table's checkpoint is now ",
        "no event is written twice");
  }
}
