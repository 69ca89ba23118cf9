package dev.gpucoll.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.util.Set;

/**
 * The fences between the modules, checked on their compiled classes (ARCHITECTURE.md, "Fences").
 * Layers point down only: api <- core <- cuda and spark; cudf and linalg on api alone; cusolvermp
 * on api and linalg; the GPU checks, their reference and the examples sit on top and nothing
 * depends on them. Of
 * gpucoll-cuda, other modules use only its published types; of gpucoll-core, nothing of the host
 * backend's implementation; of gpucoll-spark, nothing of its internal sub-packages. No package
 * cycles (gpucoll-core's packages counted as one; gpucoll-spark's each on its own, its face and its
 * published types apart).
 */
@AnalyzeClasses(packages = {"dev.gpucoll", "org.apache.spark.gpucoll"}, importOptions = ImportOption.DoNotIncludeTests.class)
class FencesTest {
  private static final String CHECKS = "dev.gpucoll.cuda.check..";

  /** gpucoll-cuda's classes (its package tree, less the GPU checks' package that lies inside it). */
  private static final DescribedPredicate<JavaClass> CUDA =
      resideInAPackage("dev.gpucoll.cuda..").and(not(resideInAPackage(CHECKS))).as("gpucoll-cuda");

  /**
   * What every other module may use of gpucoll-cuda: the backend's name, probing CUDA without
   * crashing the JVM, and device memory, streams and events for the tools' own buffers.
   */
  private static final Set<String> CUDA_PUBLISHED = Set.of("dev.gpucoll.cuda.GpuBackend",
      "dev.gpucoll.cuda.CudaEnvironment", "dev.gpucoll.cuda.CudaProbe", "dev.gpucoll.cuda.CudaNative",
      "dev.gpucoll.cuda.DeviceFacts", "dev.gpucoll.cuda.CudaException");

  /**
   * What the GPU checks may use besides: the kernel table (kernels, protocols: the variants), the loaded
   * fatbin (every shipped kernel must be in it), and the NCCL layer and the eligibility facts,
   * which NcclSelfCheck checks against NCCL's own log.
   */
  private static final DescribedPredicate<JavaClass> CUDA_FOR_CHECKS = topLevelNamed(Set.of(
      "dev.gpucoll.cuda.KernelTable", "dev.gpucoll.cuda.KernelImage"))
      .or(resideInAPackage("dev.gpucoll.cuda.nccl"))
      .or(resideInAPackage("dev.gpucoll.cuda.eligibility"));

  /** The host backend's implementation: reached through CommunicatorFactory and the ServiceLoader only. */
  private static final DescribedPredicate<JavaClass> CORE_HOST_INTERNALS = resideInAPackage("dev.gpucoll.core.host")
      .and(not(topLevelNamed(Set.of("dev.gpucoll.core.host.HalfFloats"))))
      .as("the host backend's internals (dev.gpucoll.core.host but HalfFloats)");

  @ArchTest
  static final ArchRule layersPointDownOnly = layeredArchitecture().consideringOnlyDependenciesInLayers()
      .layer("api").definedBy("dev.gpucoll.api..")
      .layer("core").definedBy("dev.gpucoll.core..")
      .layer("cuda").definedBy(CUDA)
      .layer("spark").definedBy("dev.gpucoll.spark..", "org.apache.spark.gpucoll..")
      .optionalLayer("cudf").definedBy("dev.gpucoll.cudf..") // built with -Pcudf only
      .layer("linalg").definedBy("dev.gpucoll.linalg..")
      .layer("cusolvermp").definedBy("dev.gpucoll.cusolvermp..")
      .layer("checkSupport").definedBy("dev.gpucoll.check..")
      .layer("gpuChecks").definedBy(CHECKS)
      .layer("examples").definedBy("dev.gpucoll.examples..")
      .whereLayer("examples").mayNotBeAccessedByAnyLayer()
      .whereLayer("gpuChecks").mayNotBeAccessedByAnyLayer()
      .whereLayer("cudf").mayOnlyBeAccessedByLayers("gpuChecks") // the cuDF job uses it as a user would
      .whereLayer("linalg").mayOnlyBeAccessedByLayers("cusolvermp", "gpuChecks", "examples")
      .whereLayer("cusolvermp").mayOnlyBeAccessedByLayers("gpuChecks", "examples")
      .whereLayer("checkSupport").mayOnlyBeAccessedByLayers("gpuChecks")
      .whereLayer("spark").mayOnlyBeAccessedByLayers("gpuChecks", "examples") // the Spark GPU jobs, the examples
      .whereLayer("cuda").mayOnlyBeAccessedByLayers("gpuChecks", "examples")
      .whereLayer("core").mayOnlyBeAccessedByLayers("cuda", "spark", "checkSupport", "gpuChecks", "examples")
      .whereLayer("api").mayOnlyBeAccessedByLayers("core", "cuda", "spark", "cudf", "linalg", "cusolvermp",
          "checkSupport", "gpuChecks", "examples");

  @ArchTest
  static final ArchRule othersUseOnlyTheCudaBackendsPublishedTypes = noClasses()
      .that(not(CUDA)).and(not(resideInAPackage(CHECKS)))
      .should().dependOnClassesThat(CUDA.and(not(topLevelNamed(CUDA_PUBLISHED))))
      .because("gpucoll-cuda's route, launch, ABI, workspaces and NCCL wiring are internal (ARCHITECTURE.md, Fences)");

  @ArchTest
  static final ArchRule theGpuChecksUseOnlyWhatIsPublishedToThem = noClasses()
      .that().resideInAPackage(CHECKS)
      .should().dependOnClassesThat(CUDA.and(not(topLevelNamed(CUDA_PUBLISHED))).and(not(CUDA_FOR_CHECKS)))
      .because("the GPU checks form communicators through CommunicatorFactory and set internal settings,"
          + " never reaching the route or the launch");

  @ArchTest
  static final ArchRule theHostBackendsImplementationStaysInCore = noClasses()
      .that().resideOutsideOfPackage("dev.gpucoll.core..")
      .should().dependOnClassesThat(CORE_HOST_INTERNALS);

  /**
   * gpucoll-spark's sub-packages (the plugin, the Python door, barrier tasks, RPC and rendezvous,
   * reports, metrics): public only for each other, never used outside the module (ARCHITECTURE.md,
   * "gpucoll-spark").
   */
  private static final String SPARK_INTERNALS = "dev.gpucoll.spark.*..";

  @ArchTest
  static final ArchRule theSparkLayersSubPackagesStayInside = noClasses()
      .that().resideOutsideOfPackages("dev.gpucoll.spark..", "org.apache.spark.gpucoll..")
      .should().dependOnClassesThat().resideInAPackage(SPARK_INTERNALS)
      .because("gpucoll-spark's users reach it through dev.gpucoll.spark alone (ARCHITECTURE.md, Fences)");

  /**
   * The classes of dev.gpucoll.spark that stand above its sub-packages: the entry points (the barrier
   * API for Java and Scala, its object collectives, the plugin). The package's other classes are the
   * published types the sub-packages build or take (reports, events, the Java body, the serializer):
   * they stand below.
   */
  private static final Set<String> SPARK_FACE = Set.of("dev.gpucoll.spark.GpuCollectives",
      "dev.gpucoll.spark.GpuCollectivesPlugin", "dev.gpucoll.spark.SparkObjectCollectives",
      "dev.gpucoll.spark.syntax");

  /**
   * One slice per package, but the packages of gpucoll-core together (dev.gpucoll.core and its
   * config and spi packages point at each other: GpuCollConf parses Algorithm; CommunicatorFactory
   * reads GpuCollConf and the SPI), and dev.gpucoll.spark in two (its face above its sub-packages,
   * its published types below them). The Spark UI shim (org.apache.spark.gpucoll, in Spark's
   * namespace for Spark's private[spark] UI types) is one slice: the plugin attaches it by name.
   */
  private static final SliceAssignment PACKAGES = new SliceAssignment() {
    @Override
    public SliceIdentifier getIdentifierOf(JavaClass c) {
      String p = c.getPackageName();
      if (p.startsWith("dev.gpucoll.core")) {
        return SliceIdentifier.of("gpucoll-core");
      }
      if (p.equals("dev.gpucoll.spark")) {
        return SliceIdentifier.of(topLevelNamed(SPARK_FACE).test(c) ? "gpucoll-spark's face" : "gpucoll-spark's published types");
      }
      return p.startsWith("org.apache.spark.gpucoll") ? SliceIdentifier.of("gpucoll-spark's UI") : SliceIdentifier.of(p);
    }

    @Override
    public String getDescription() {
      return "the project's packages (gpucoll-core's as one, dev.gpucoll.spark's face and published types apart)";
    }
  };

  @ArchTest
  static final ArchRule noPackageCycles = slices().assignedFrom(PACKAGES).should().beFreeOfCycles();

  /** Classes named in {@code names}, or nested in one of them. */
  private static DescribedPredicate<JavaClass> topLevelNamed(Set<String> names) {
    return DescribedPredicate.describe("one of " + names, c -> {
      String name = c.getName();
      int nested = name.indexOf('$');
      return names.contains(nested < 0 ? name : name.substring(0, nested));
    });
  }
}
