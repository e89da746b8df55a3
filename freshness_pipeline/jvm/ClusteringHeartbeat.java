package io.freshness.hudi;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.storage.HoodieStorage;
import org.apache.hudi.storage.StoragePath;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The heartbeat of a clustering while a driver executes it.
 *
 * <p>Hudi 1.1 keeps a heartbeat for writes (lazy failed-writes cleaning) but none for a
 * clustering, and the clustering sensor resumes a pending clustering (Hudi rolls back its files,
 * then executes the plan again) only when nothing says it is still executing. A clustering's
 * client can die while its driver carries on: a run worker killed while the shared Spark Connect
 * service executes its {@code run_clustering} call. Without a heartbeat the next run rolled that
 * clustering back under the driver, which then completed the replacecommit over the files the
 * rollback had deleted: the replaced file groups' rows left the table.
 *
 * <p>The file {@code .hoodie/.heartbeat/<instant>} (where Hudi keeps a write's) is rewritten every
 * {@link #INTERVAL_MS} while the thread that started it is still inside Hudi's {@code cluster}
 * call, which executes the plan and then commits it. Once that thread has left the call
 * (committed or failed) or ended, the file is deleted. A driver that dies stops beating, and the
 * file ages until the sensor takes the clustering for abandoned.
 */
final class ClusteringHeartbeat {

  static final long INTERVAL_MS = 10_000;
  private static final Logger LOG = LoggerFactory.getLogger(ClusteringHeartbeat.class);
  private static final ScheduledExecutorService TIMER =
      Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "freshness-clustering-heartbeat");
        thread.setDaemon(true);
        return thread;
      });

  private ClusteringHeartbeat() {}

  /** Beats for `instant` of the table at `basePath` while `executor` is inside cluster(). */
  static void start(HoodieStorage storage, String basePath, String instant, Thread executor) {
    StoragePath file =
        new StoragePath(HoodieTableMetaClient.getHeartbeatFolderPath(basePath), instant);
    beat(storage, file);
    AtomicReference<ScheduledFuture<?>> self = new AtomicReference<>();
    self.set(TIMER.scheduleWithFixedDelay(() -> {
      if (executor.isAlive() && insideCluster(executor)) {
        beat(storage, file);
        return;
      }
      try {
        storage.deleteFile(file);
      } catch (Exception e) {
        LOG.warn("could not delete the clustering heartbeat " + file, e);
      }
      ScheduledFuture<?> task = self.get();
      if (task != null) {
        task.cancel(false);
      }
    }, INTERVAL_MS, INTERVAL_MS, TimeUnit.MILLISECONDS));
  }

  /** Whether `thread` is executing Hudi's clustering of a table service client. */
  static boolean insideCluster(Thread thread) {
    for (StackTraceElement frame : thread.getStackTrace()) {
      if (frame.getMethodName().equals("cluster")
          && frame.getClassName().endsWith("TableServiceClient")) {
        return true;
      }
    }
    return false;
  }

  private static void beat(HoodieStorage storage, StoragePath file) {
    try {
      storage.create(file, true).close();
    } catch (Exception e) {
      // A missed beat only brings the moment others may take the clustering as abandoned
      // nearer; the clustering itself goes on.
      LOG.warn("could not write the clustering heartbeat " + file, e);
    }
  }
}
