package freshness.agent;

import java.io.DataOutput;
import java.io.IOException;
import java.lang.instrument.Instrumentation;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * A Hadoop configuration written for another JVM (a task's closure, Hudi's metaclient and
 * storage configuration in every task) leaves out where each of its entries came from.
 *
 * <p>Hadoop's `Configuration.write` writes, after each entry's key and value, the names of
 * the files it was read from, each name through a gzip stream of its own
 * (`WritableUtils.writeCompressedStringArray`); a Spark driver's configuration has about a
 * thousand entries, so every task Hudi runs opened about a thousand gzip streams to read its
 * configuration, and the driver as many to write it (the hottest frames of ingestion's JVM).
 * The reader only records those names (`Configuration.getPropertySources`, a diagnostic),
 * and marks every entry it reads as set "programmatically" anyway.
 *
 * <p>Only that one call in `write` changes, to {@link #noSources}, which writes what
 * Hadoop writes for an entry without sources (the int -1): the format
 * stays Hadoop's, so a JVM without the agent reads it. If Hadoop's class has not exactly
 * one such call, nothing changes and the agent says so on stderr.
 */
public final class HadoopConfSources {
  static final String CONFIGURATION = "org/apache/hadoop/conf/Configuration";
  static final String WRITABLE_UTILS = "org/apache/hadoop/io/WritableUtils";
  static final String WRITE_SOURCES = "writeCompressedStringArray";
  static final String WRITE_SOURCES_DESC = "(Ljava/io/DataOutput;[Ljava/lang/String;)V";

  private HadoopConfSources() {}

  static void install(Instrumentation instrumentation) {
    instrumentation.addTransformer(
        new FreshnessAgent.OneClass(
            CONFIGURATION,
            HadoopConfSources::rewrite,
            "HadoopConfSources",
            "has not the one call expected (Hadoop 3's Configuration.write); configurations "
                + "keep their sources",
            null));
  }

  /** What Hadoop writes for an entry whose sources are unknown (a null array: the int -1). */
  public static void noSources(DataOutput out, String[] sources) throws IOException {
    out.writeInt(-1);
  }

  /** Configuration with its `write` writing no sources, or null unless the call was found once. */
  static byte[] rewrite(byte[] bytes) {
    int[] found = {0};
    ClassReader reader = new ClassReader(bytes);
    ClassWriter writer = new ClassWriter(reader, 0);
    reader.accept(
        new ClassVisitor(Opcodes.ASM9, writer) {
          @Override
          public MethodVisitor visitMethod(
              int access, String method, String desc, String signature, String[] exceptions) {
            MethodVisitor next = super.visitMethod(access, method, desc, signature, exceptions);
            if (!method.equals("write") || !desc.equals("(Ljava/io/DataOutput;)V")) {
              return next;
            }
            return new MethodVisitor(Opcodes.ASM9, next) {
              @Override
              public void visitMethodInsn(
                  int opcode, String owner, String called, String calledDesc, boolean itf) {
                if (opcode == Opcodes.INVOKESTATIC
                    && owner.equals(WRITABLE_UTILS)
                    && called.equals(WRITE_SOURCES)
                    && calledDesc.equals(WRITE_SOURCES_DESC)) {
                  found[0]++;
                  // the same operands, no result: the frames and stack sizes stay valid
                  super.visitMethodInsn(
                      Opcodes.INVOKESTATIC,
                      "freshness/agent/HadoopConfSources",
                      "noSources",
                      WRITE_SOURCES_DESC,
                      false);
                  return;
                }
                super.visitMethodInsn(opcode, owner, called, calledDesc, itf);
              }
            };
          }
        },
        0);
    return found[0] == 1 ? writer.toByteArray() : null;
  }
}
