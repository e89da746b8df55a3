package io.freshness.hudi;

import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.hudi.client.transaction.ConcurrentOperation;
import org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy;
import org.apache.hudi.common.model.HoodieCommitMetadata;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.timeline.HoodieInstant;
import org.apache.hudi.common.table.timeline.HoodieTimeline;
import org.apache.hudi.common.util.Option;
import org.apache.hudi.exception.HoodieWriteConflictException;
import org.apache.hudi.table.HoodieTable;

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
public class CheckpointConflictResolutionStrategy
    extends SimpleConcurrentFileWritesConflictResolutionStrategy {

  public static final String CHECKPOINT_BEFORE_KEY = "freshness.checkpoint_before";
  // Where ingestion keeps its source position: the landing folder's, Kafka's (Hudi's own key).
  public static final List<String> CHECKPOINT_KEYS =
      List.of("freshness.landing_checkpoint", "streamer.checkpoint.key.v2");

  private String checkpointInstantTime;
  private Map<String, String> currentCheckpoints = Map.of();
  private final Set<String> concurrentInstantTimes = new HashSet<>();

  @Override
  public Stream<HoodieInstant> getCandidateInstants(
      HoodieTableMetaClient metaClient,
      HoodieInstant currentInstant,
      Option<HoodieInstant> lastSuccessfulInstant) {
    List<HoodieInstant> concurrent =
        super.getCandidateInstants(metaClient, currentInstant, lastSuccessfulInstant)
            .collect(Collectors.toList());
    concurrentInstantTimes.clear();
    concurrent.forEach(i -> concurrentInstantTimes.add(i.requestedTime()));
    checkpointInstantTime = null;
    currentCheckpoints = Map.of();
    HoodieTimeline completed =
        metaClient.reloadActiveTimeline().getCommitsTimeline().filterCompletedInstants();
    // A raw table's newest commits are ingestion's (clusterings between them): the scan
    // stops at the first one that carries a checkpoint.
    HoodieInstant latest =
        completed
            .getReverseOrderedInstantsByCompletionTime()
            .filter(instant -> checkpointsOf(completed, instant))
            .findFirst()
            .orElse(null);
    if (latest == null) {
      return concurrent.stream();
    }
    // Always examined, even when it completed before this write started: the batch was read
    // earlier still, from whatever checkpoint was current then.
    return Stream.concat(Stream.of(latest), concurrent.stream().filter(i -> !i.equals(latest)));
  }

  private boolean checkpointsOf(HoodieTimeline timeline, HoodieInstant instant) {
    Map<String, String> extra;
    try {
      extra = timeline.readCommitMetadata(instant).getExtraMetadata();
    } catch (IOException e) {
      throw new HoodieWriteConflictException("cannot read commit metadata of " + instant, e);
    }
    Map<String, String> found = new HashMap<>();
    for (String key : CHECKPOINT_KEYS) {
      if (extra != null && extra.get(key) != null) {
        found.put(key, extra.get(key));
      }
    }
    if (found.isEmpty()) {
      return false;
    }
    checkpointInstantTime = instant.requestedTime();
    currentCheckpoints = found;
    return true;
  }

  /** Why this commit must not commit against {@code other}, or null. */
  private String stale(ConcurrentOperation thisOperation, ConcurrentOperation other) {
    Option<HoodieCommitMetadata> metadata = thisOperation.getCommitMetadataOption();
    Map<String, String> extra =
        metadata.isPresent() && metadata.get().getExtraMetadata() != null
            ? metadata.get().getExtraMetadata()
            : Map.of();
    String before = extra.get(CHECKPOINT_BEFORE_KEY);
    if (before == null
        || checkpointInstantTime == null
        || !checkpointInstantTime.equals(other.getInstantTimestamp())) {
      return null;
    }
    String key = CHECKPOINT_KEYS.stream().filter(extra::containsKey).findFirst().orElse(null);
    String current = key == null ? null : currentCheckpoints.get(key);
    // An empty checkpoint_before: the batch was read from a table with no checkpoint yet.
    String expected = before.isEmpty() ? null : before;
    if (Objects.equals(expected, current)) {
      return null;
    }
    return "STALE_CHECKPOINT: ingestion read its batch from checkpoint "
        + (expected == null ? "none" : expected)
        + " but the table's checkpoint is now "
        + current
        + " (commit "
        + checkpointInstantTime
        + "); not committing, so no event is written twice";
  }

  @Override
  public boolean hasConflict(ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    if (stale(thisOperation, otherOperation) != null) {
      return true;
    }
    return concurrentInstantTimes.contains(otherOperation.getInstantTimestamp())
        && super.hasConflict(thisOperation, otherOperation);
  }

  @Override
  public Option<HoodieCommitMetadata> resolveConflict(
      HoodieTable table, ConcurrentOperation thisOperation, ConcurrentOperation otherOperation) {
    String stale = stale(thisOperation, otherOperation);
    if (stale != null) {
      throw new HoodieWriteConflictException(stale);
    }
    return super.resolveConflict(table, thisOperation, otherOperation);
  }
}
