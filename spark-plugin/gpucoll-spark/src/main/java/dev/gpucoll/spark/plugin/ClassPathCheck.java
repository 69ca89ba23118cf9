package dev.gpucoll.spark.plugin;

import java.util.ArrayList;
import java.util.List;

/**
 * Checks, when the plugin starts, that everything it needs besides Spark is loadable, and names
 * what is not: a thin gpucoll-spark jar alone on {@code --jars} would otherwise fail later with a
 * bare NoClassDefFoundError on some executor.
 *
 * <p>Internal: public for the other packages of gpucoll-spark, not for users.
 */
public final class ClassPathCheck {
  /** One part of the one jar and how to tell it is there. */
  record Part(String name, String className, String resource) {
    static Part cls(String name, String className) {
      return new Part(name, className, null);
    }

    static Part res(String name, String resource) {
      return new Part(name, null, resource);
    }

    String what() {
      return name + " (" + (className != null ? className : resource) + ")";
    }
  }

  static final List<Part> REQUIRED = List.of(
      Part.cls("gpucoll-api", "dev.gpucoll.api.Communicator"),
      Part.cls("gpucoll-core", "dev.gpucoll.core.CommunicatorFactory"),
      Part.cls("gpucoll-cuda", "dev.gpucoll.cuda.GpuBackend"),
      Part.res("gpucoll-native-kernels, the kernel fatbin", "dev/gpucoll/native/gpucoll_kernels.fatbin"),
      Part.cls("JavaCPP", "org.bytedeco.javacpp.Loader"),
      Part.res("JavaCPP's linux-x86_64 natives", "org/bytedeco/javacpp/linux-x86_64/libjnijavacpp.so"),
      Part.cls("the JavaCPP CUDA presets", "org.bytedeco.cuda.global.cudart"),
      Part.res("the CUDA presets' linux-x86_64 natives", "org/bytedeco/cuda/linux-x86_64/libjnicudart.so"));

  private ClassPathCheck() {}

  /** The parts {@code loader} cannot find, empty when all are there. */
  static List<Part> missing(ClassLoader loader) {
    List<Part> out = new ArrayList<>();
    for (Part p : REQUIRED) {
      boolean found;
      if (p.className() != null) {
        try {
          Class.forName(p.className(), false, loader); // not initialized: no native code loads here
          found = true;
        } catch (ClassNotFoundException | LinkageError e) {
          found = false;
        }
      } else {
        found = loader.getResource(p.resource()) != null;
      }
      if (!found) {
        out.add(p);
      }
    }
    return out;
  }

  /** Throws IllegalStateException naming every missing part when {@code loader} lacks any. */
  public static void require(ClassLoader loader, String side) {
    List<Part> missing = missing(loader);
    if (!missing.isEmpty()) {
      throw new IllegalStateException("gpucoll cannot start on the " + side + ": the class path lacks "
          + String.join(", ", missing.stream().map(Part::what).toList())
          + ". Put the one jar gpucoll-dist_" + scalaBinary() + "-<version>.jar on --jars (it holds all of them);"
          + " the thin gpucoll-spark_" + scalaBinary() + " jar alone is not enough");
    }
  }

  /** The Scala binary version of the running Spark ("2.12", "2.13"): the one jar to name is built for it. */
  static String scalaBinary() {
    String full = scala.util.Properties$.MODULE$.versionNumberString(); // "2.13.8"
    int second = full.indexOf('.', full.indexOf('.') + 1);
    return second < 0 ? full : full.substring(0, second);
  }
}
