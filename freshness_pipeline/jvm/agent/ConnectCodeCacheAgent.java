package freshness.agent;

import java.lang.instrument.Instrumentation;
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

  static void install(Instrumentation instrumentation) {
    instrumentation.addTransformer(
        new FreshnessAgent.OneClass(
            HOLDER,
            ConnectCodeCacheAgent::rewrite,
            "ConnectCodeCacheAgent",
            "has not the calls expected (Spark 3.5's Connect server); each request keeps a "
                + "class loader of its own",
            "one class loader for sessions without code"));
  }

  /**
   * A call `owner.name()` returning `returns`, inside a method of SessionHolder whose name
   * starts with `in`, becomes `SharedCode.name(owner)`: the same operand, the same result.
   */
  static final class Route {
    final String in;
    final String owner;
    final String name;
    final String returns;
    int found;

    Route(String in, String owner, String name, String returns) {
      this.in = in;
      this.owner = owner;
      this.name = name;
      this.returns = returns;
    }

    boolean matches(String method, int opcode, String owner, String name, String desc) {
      return opcode == Opcodes.INVOKEVIRTUAL
          && method.startsWith(in)
          && owner.equals(this.owner)
          && name.equals(this.name)
          && desc.equals("()" + returns);
    }
  }

  /** SessionHolder with both calls routed, or null unless each was found exactly once. */
  static byte[] rewrite(byte[] bytes) {
    Route[] routes = {
      new Route("withContextClassLoader", HOLDER, "classloader", "Ljava/lang/ClassLoader;"),
      new Route(
          "$anonfun$withContextClassLoader", MANAGER, "state", "Lorg/apache/spark/JobArtifactState;")
    };
    ClassReader reader = new ClassReader(bytes);
    ClassWriter writer = new ClassWriter(reader, 0);
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
                for (Route route : routes) {
                  if (route.matches(method, opcode, owner, called, calledDesc)) {
                    route.found++;
                    super.visitMethodInsn(
                        Opcodes.INVOKESTATIC,
                        SHARED,
                        route.name,
                        "(L" + route.owner + ";)" + route.returns,
                        false);
                    return;
                  }
                }
                super.visitMethodInsn(opcode, owner, called, calledDesc, itf);
              }
            };
          }
        },
        0);
    for (Route route : routes) {
      if (route.found != 1) {
        return null;
      }
    }
    return writer.toByteArray();
  }
}
