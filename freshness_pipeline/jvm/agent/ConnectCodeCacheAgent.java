package freshness.agent;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * A Java agent for the Spark service: Spark Connect's two calls that give each request and
 * each session a class loader of its own go to `freshness.connect.SharedCode` instead, which
 * keeps them for sessions that brought code of their own (see SharedCode for why).
 *
 * <p>Only those two call instructions change, each for a static call with the same operand
 * and result, so the class's frames and stack sizes stay valid. If Spark's classes do not
 * have them (another Spark version), nothing changes and the agent says so on stderr.
 */
public final class ConnectCodeCacheAgent {
  static final String HOLDER = "org/apache/spark/sql/connect/service/SessionHolder";
  static final String MANAGER = "org/apache/spark/sql/connect/artifact/SparkConnectArtifactManager";
  static final String SHARED = "freshness/connect/SharedCode";

  private ConnectCodeCacheAgent() {}

  public static void premain(String args, Instrumentation instrumentation) {
    instrumentation.addTransformer(new Transformer());
  }

  static final class Transformer implements ClassFileTransformer {
    @Override
    public byte[] transform(
        ClassLoader loader,
        String name,
        Class<?> redefined,
        ProtectionDomain domain,
        byte[] bytes) {
      if (!HOLDER.equals(name)) {
        return null;
      }
      try {
        byte[] changed = rewrite(bytes);
        if (changed == null) {
          System.err.println(
              "ConnectCodeCacheAgent: " + name + " has not the calls expected (Spark 3.5's "
                  + "Connect server); each request keeps a class loader of its own");
        } else {
          System.err.println("ConnectCodeCacheAgent: one class loader for sessions without code");
        }
        return changed;
      } catch (RuntimeException e) {
        System.err.println("ConnectCodeCacheAgent: left " + name + " unchanged: " + e);
        return null;
      }
    }
  }

  /** SessionHolder with both calls routed, or null if either is missing. */
  static byte[] rewrite(byte[] bytes) {
    ClassReader reader = new ClassReader(bytes);
    ClassWriter writer = new ClassWriter(reader, 0);
    int[] routed = new int[2];
    reader.accept(
        new ClassVisitor(Opcodes.ASM9, writer) {
          @Override
          public MethodVisitor visitMethod(
              int access, String method, String desc, String signature, String[] exceptions) {
            MethodVisitor next = super.visitMethod(access, method, desc, signature, exceptions);
            return new MethodVisitor(Opcodes.ASM9, next) {
              @Override
              public void visitMethodInsn(
                  int opcode, String owner, String called, String calledDesc, boolean itf) {
                if (opcode == Opcodes.INVOKEVIRTUAL
                    && owner.equals(HOLDER)
                    && called.equals("classloader")
                    && calledDesc.equals("()Ljava/lang/ClassLoader;")
                    && method.equals("withContextClassLoader")) {
                  routed[0]++;
                  super.visitMethodInsn(
                      Opcodes.INVOKESTATIC, SHARED, "classloader",
                      "(L" + HOLDER + ";)Ljava/lang/ClassLoader;", false);
                } else if (opcode == Opcodes.INVOKEVIRTUAL
                    && owner.equals(MANAGER)
                    && called.equals("state")
                    && calledDesc.equals("()Lorg/apache/spark/JobArtifactState;")
                    && method.startsWith("$anonfun$withContextClassLoader")) {
                  routed[1]++;
                  super.visitMethodInsn(
                      Opcodes.INVOKESTATIC, SHARED, "state",
                      "(L" + MANAGER + ";)Lorg/apache/spark/JobArtifactState;", false);
                } else {
                  super.visitMethodInsn(opcode, owner, called, calledDesc, itf);
                }
              }
            };
          }
        },
        0);
    return routed[0] == 1 && routed[1] == 1 ? writer.toByteArray() : null;
  }
}
