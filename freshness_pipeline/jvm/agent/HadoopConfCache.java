package freshness.agent;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * A Hadoop configuration read by a task is parsed once per JVM for the same bytes.
 *
 * <p>Every task Hudi runs deserializes the table's metaclient and storage configuration: a
 * Hadoop {@code Configuration} of every entry the driver has loaded (hundreds), which
 * {@code Configuration.readFields} decodes string by string and sets entry by entry through
 * the deprecation bookkeeping of {@code set}. The tasks of a step, and the steps of a table,
 * ship the same bytes again and again.
 *
 * <p>{@code readFields} is renamed {@code readFields$hadoop} and a new {@code readFields}
 * calls {@link #readFields}: it reads the entries' bytes as Hadoop wrote them (lengths only,
 * nothing decoded), and when the configuration being read is fresh (made with {@code new
 * Configuration(false)} and untouched, as every deserializer makes it) it takes a copy of
 * the one configuration this JVM already parsed from the same bytes: the three maps
 * {@code readFields} fills (the properties, the overlay and each entry's sources), each
 * copied, so no two configurations share a mutable map. Anything else (a configuration with
 * defaults or resources, a class not as expected) is read by Hadoop's own code from the same
 * bytes. The wire format is untouched: only the reading JVM changes.
 */
public final class HadoopConfCache {
  static final String CONFIGURATION = "org/apache/hadoop/conf/Configuration";
  static final String READ = "readFields";
  static final String READ_DESC = "(Ljava/io/DataInput;)V";
  static final String HADOOPS_READ = "readFields$hadoop";

  /** Parsed configurations by their bytes; never handed out, only copied. */
  private static final Map<Bytes, Object> PARSED = new ConcurrentHashMap<>();

  /** Kept bounded: a JVM sees a few configurations (one per kind of writer and reader). */
  static final int MAX_PARSED = 64;

  private static final AtomicLong HITS = new AtomicLong();
  private static final AtomicLong MISSES = new AtomicLong();
  private static final AtomicLong UNCACHED = new AtomicLong();

  private static volatile Access access;

  private HadoopConfCache() {}

  static void install(Instrumentation instrumentation) {
    instrumentation.addTransformer(
        new FreshnessAgent.OneClass(
            CONFIGURATION,
            HadoopConfCache::rewrite,
            "HadoopConfCache",
            "has no readFields(DataInput) (Hadoop 3's Configuration); configurations are "
                + "parsed by every task",
            null));
  }

  /**
   * Reads a configuration written by {@code Configuration.write} into {@code conf}: a copy of
   * the one parsed before from the same bytes where {@code conf} is fresh, Hadoop's own
   * reading otherwise.
   */
  public static void readFields(Object conf, DataInput in) throws IOException {
    byte[] bytes = entryBytes(in);
    Access fields = access(conf);
    if (fields == null || !fields.isFresh(conf)) {
      UNCACHED.incrementAndGet();
      hadoopsRead(conf, bytes);
      return;
    }
    Bytes key = new Bytes(bytes);
    Object parsed = PARSED.get(key);
    if (parsed == null) {
      MISSES.incrementAndGet();
      parsed = fields.newEmpty();
      hadoopsRead(parsed, bytes);
      if (PARSED.size() >= MAX_PARSED) {
        PARSED.clear();
      }
      PARSED.put(key, parsed);
    } else {
      HITS.incrementAndGet();
    }
    fields.copy(parsed, conf);
  }

  /** Hits, misses (parsed and kept) and reads left to Hadoop, since the JVM started. */
  public static long[] counts() {
    return new long[] {HITS.get(), MISSES.get(), UNCACHED.get()};
  }

  private static void hadoopsRead(Object conf, byte[] bytes) throws IOException {
    Access fields = access(conf);
    Method read =
        fields != null ? fields.hadoopsRead : hadoopsReadOf(conf.getClass());
    try {
      read.invoke(conf, new DataInputStream(new ByteArrayInputStream(bytes)));
    } catch (IllegalAccessException e) {
      throw new IOException(e);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof IOException) {
        throw (IOException) cause;
      }
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IOException(cause);
    }
  }

  private static Method hadoopsReadOf(Class<?> type) throws IOException {
    try {
      return configurationClass(type).getMethod(HADOOPS_READ, DataInput.class);
    } catch (NoSuchMethodException e) {
      throw new IOException(e);
    }
  }

  /**
   * What {@code Configuration.write} wrote, as bytes: a vint count, then per entry the key
   * and the value (a vint length and UTF-8 each) and the sources (an int count, -1 for none,
   * then per name an int length, -1 for null, and the gzipped bytes).
   */
  static byte[] entryBytes(DataInput in) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(16 * 1024);
    DataOutputStream out = new DataOutputStream(bytes);
    int entries = copyVInt(in, out);
    for (int i = 0; i < entries; i++) {
      copyBytes(in, out, copyVInt(in, out));
      copyBytes(in, out, copyVInt(in, out));
      int sources = in.readInt();
      out.writeInt(sources);
      for (int s = 0; s < sources; s++) {
        int length = in.readInt();
        out.writeInt(length);
        copyBytes(in, out, length);
      }
    }
    out.flush();
    return bytes.toByteArray();
  }

  private static void copyBytes(DataInput in, DataOutputStream out, int length)
      throws IOException {
    if (length <= 0) {
      return;
    }
    byte[] chunk = new byte[length];
    in.readFully(chunk);
    out.write(chunk);
  }

  /** Hadoop's WritableUtils.readVInt, copying the bytes it read. */
  private static int copyVInt(DataInput in, DataOutputStream out) throws IOException {
    byte first = in.readByte();
    out.writeByte(first);
    int size = first >= -112 ? 1 : (first < -120 ? -119 - first : -111 - first);
    if (size == 1) {
      return first;
    }
    long value = 0;
    for (int i = 0; i < size - 1; i++) {
      byte b = in.readByte();
      out.writeByte(b);
      value = (value << 8) | (b & 0xFF);
    }
    boolean negative = first < -120 || (first >= -112 && first < 0);
    return (int) (negative ? ~value : value);
  }

  private static Class<?> configurationClass(Class<?> type) {
    Class<?> c = type;
    while (c != null && !c.getName().equals("org.apache.hadoop.conf.Configuration")) {
      c = c.getSuperclass();
    }
    if (c == null) {
      throw new IllegalArgumentException(type + " is not a Hadoop Configuration");
    }
    return c;
  }

  private static Access access(Object conf) {
    Access found = access;
    if (found != null && found.type == configurationClass(conf.getClass())) {
      return found;
    }
    try {
      found = new Access(configurationClass(conf.getClass()));
      access = found;
      return found;
    } catch (ReflectiveOperationException | RuntimeException e) {
      System.err.println("HadoopConfCache: configurations parsed by every task: " + e);
      return null;
    }
  }

  /** The fields of Hadoop's Configuration that readFields fills, and how to make one. */
  private static final class Access {
    final Class<?> type;
    final Field properties;
    final Field overlay;
    final Field sources;
    final Field resources;
    final Field finalParameters;
    final Field loadDefaults;
    final Constructor<?> empty;
    final Method hadoopsRead;

    Access(Class<?> type) throws ReflectiveOperationException {
      this.type = type;
      properties = field("properties");
      overlay = field("overlay");
      sources = field("updatingResource");
      resources = field("resources");
      finalParameters = field("finalParameters");
      loadDefaults = field("loadDefaults");
      empty = type.getConstructor(boolean.class);
      hadoopsRead = type.getMethod(HADOOPS_READ, DataInput.class);
    }

    private Field field(String name) throws NoSuchFieldException {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    }

    /** As `new Configuration(false)` leaves it: nothing loaded, set or added. */
    boolean isFresh(Object conf) {
      try {
        Object defaults = loadDefaults.get(conf);
        Object updating = sources.get(conf);
        return conf.getClass() == type
            && Boolean.FALSE.equals(defaults)
            && properties.get(conf) == null
            && overlay.get(conf) == null
            && ((Collection<?>) resources.get(conf)).isEmpty()
            && ((Collection<?>) finalParameters.get(conf)).isEmpty()
            && (updating == null || ((Map<?, ?>) updating).isEmpty());
      } catch (IllegalAccessException | RuntimeException e) {
        return false;
      }
    }

    Object newEmpty() throws IOException {
      try {
        return empty.newInstance(false);
      } catch (ReflectiveOperationException e) {
        throw new IOException(e);
      }
    }

    /** `to` (fresh) gets its own copies of the maps `from` was read into. */
    void copy(Object from, Object to) throws IOException {
      try {
        Properties props = (Properties) properties.get(from);
        Properties over = (Properties) overlay.get(from);
        Map<?, ?> updating = (Map<?, ?>) sources.get(from);
        properties.set(to, props == null ? null : props.clone());
        overlay.set(to, over == null ? null : over.clone());
        sources.set(to, updating == null ? null : new ConcurrentHashMap<>(updating));
      } catch (IllegalAccessException e) {
        throw new IOException(e);
      }
    }
  }

  /** A configuration's bytes as a map key. */
  private static final class Bytes {
    final byte[] bytes;
    final int hash;

    Bytes(byte[] bytes) {
      this.bytes = bytes;
      this.hash = Arrays.hashCode(bytes);
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Bytes
          && ((Bytes) other).hash == hash
          && Arrays.equals(((Bytes) other).bytes, bytes);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }

  /**
   * Configuration with Hadoop's readFields renamed readFields$hadoop and a readFields that
   * calls {@link #readFields}; null when the class has no such method.
   */
  static byte[] rewrite(byte[] bytes) {
    boolean[] found = {false};
    ClassReader reader = new ClassReader(bytes);
    ClassWriter writer = new ClassWriter(reader, 0);
    reader.accept(
        new ClassVisitor(Opcodes.ASM9, writer) {
          @Override
          public MethodVisitor visitMethod(
              int access, String method, String desc, String signature, String[] exceptions) {
            if (method.equals(READ) && desc.equals(READ_DESC)) {
              found[0] = true;
              return super.visitMethod(access, HADOOPS_READ, desc, signature, exceptions);
            }
            return super.visitMethod(access, method, desc, signature, exceptions);
          }

          @Override
          public void visitEnd() {
            if (found[0]) {
              MethodVisitor read =
                  super.visitMethod(
                      Opcodes.ACC_PUBLIC,
                      READ,
                      READ_DESC,
                      null,
                      new String[] {"java/io/IOException"});
              read.visitCode();
              read.visitVarInsn(Opcodes.ALOAD, 0);
              read.visitVarInsn(Opcodes.ALOAD, 1);
              read.visitMethodInsn(
                  Opcodes.INVOKESTATIC,
                  "freshness/agent/HadoopConfCache",
                  READ,
                  "(Ljava/lang/Object;Ljava/io/DataInput;)V",
                  false);
              read.visitInsn(Opcodes.RETURN);
              read.visitMaxs(2, 2);
              read.visitEnd();
            }
            super.visitEnd();
          }
        },
        0);
    return found[0] ? writer.toByteArray() : null;
  }
}
