package io.freshness.spark;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.pool.KryoPool;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.KryoSerializer;

/**
 * Spark's Kryo serializer with one pool of Kryo instances per JVM instead of one per task.
 *
 * <p>Spark keeps its pool of Kryo instances in a transient field of the serializer. A shuffle's
 * serializer travels inside every task and is deserialized there, so each task starts with an
 * empty pool: a map task that writes N reduce partitions at once (Spark's bypass-merge writer
 * opens a stream per partition) builds N Kryo instances, and each reduce task one more. Building
 * one registers a few hundred classes (Spark's, Scala's, Hudi's registrar) and makes reflective
 * instantiators, which generate classes the JIT then compiles and the collector later unloads. In
 * ingestion's JVM that was a tenth of the CPU samples, with the JIT the largest consumer of all.
 *
 * <p>Here every copy of one serializer (the one Spark built from its configuration, and each
 * task's deserialized copy of it) borrows from the same pool, one per class loader the Kryo
 * instances resolve classes with (a Spark Connect session may have its own). Kryo instances are
 * reset on every borrow, as Spark's own pool does.
 */
public class SharedPoolKryoSerializer extends KryoSerializer {
  private static final long serialVersionUID = 1L;

  /**
   * Pools by the serializer they were made for, then by class loader, the most recently used
   * loaders only. A pooled Kryo instance refers to its class loader, so a pool keeps its loader
   * alive: a Spark Connect server gives each session a class loader of its own, and the pools of
   * sessions long gone are dropped with their loaders, the least recently used first.
   */
  private static final Map<String, Map<ClassLoader, KryoPool>> POOLS = new ConcurrentHashMap<>();

  /** Class loaders a serializer keeps pools for (a local driver uses one). */
  static final int LOADERS = 8;

  private static final String SPARK_SERIALIZER = "spark.serializer";

  /**
   * Kryo instances a pool keeps between borrows, held strongly: Spark's soft references let a
   * collection clear the pool whenever the heap is short of free space, and the next shuffle
   * built its instances again. A task holds one per open stream (one per reduce partition in
   * Spark's bypass-merge writer); a pool keeps up to this many and drops the rest on release.
   */
  private static final int POOLED = 256;

  private static final AtomicLong CREATED = new AtomicLong();

  /** Names the serializer Spark built; every deserialized copy carries the same name. */
  private final String origin = UUID.randomUUID().toString();

  public SharedPoolKryoSerializer(SparkConf conf) {
    super(conf);
    // Hudi's writer refuses a Spark whose spark.serializer names any class but Spark's Kryo
    // serializer. This is that serializer, pooled differently; Spark builds it from the
    // configuration its context then keeps, so once built the configuration names the class
    // Hudi expects (and executors elsewhere build Spark's own, while the shuffles' copies of
    // this one still pool per JVM).
    conf.set(SPARK_SERIALIZER, KryoSerializer.class.getName());
  }

  @Override
  public KryoPool pool() {
    ClassLoader loader =
        defaultClassLoader().isDefined()
            ? defaultClassLoader().get()
            : Thread.currentThread().getContextClassLoader();
    Map<ClassLoader, KryoPool> byLoader = POOLS.computeIfAbsent(origin, key -> recentLoaders());
    synchronized (byLoader) {
      // The factory runs on the borrowing thread, whose class loader is this pool's key (or
      // this copy's default one), so each Kryo it makes resolves classes the way this key says.
      return byLoader.computeIfAbsent(
          loader,
          key ->
              new KryoPool.Builder(this::newKryo)
                  .queue(new LinkedBlockingQueue<>(POOLED))
                  .build());
    }
  }

  private static Map<ClassLoader, KryoPool> recentLoaders() {
    return new LinkedHashMap<ClassLoader, KryoPool>(LOADERS * 2, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<ClassLoader, KryoPool> eldest) {
        return size() > LOADERS;
      }
    };
  }

  /** How many pools this JVM keeps, over every serializer of this class (the tests' view). */
  public static int pools() {
    int count = 0;
    for (Map<ClassLoader, KryoPool> byLoader : POOLS.values()) {
      synchronized (byLoader) {
        count += byLoader.size();
      }
    }
    return count;
  }

  @Override
  public Kryo newKryo() {
    CREATED.incrementAndGet();
    return super.newKryo();
  }

  /**
   * How many Kryo instances this JVM's serializers of this class have built: {@code SELECT
   * reflect('io.freshness.spark.SharedPoolKryoSerializer', 'created')}.
   */
  public static String created() {
    return Long.toString(CREATED.get());
  }
}
