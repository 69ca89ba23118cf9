package dev.gpucoll.cuda;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The symbols {@link CudaNative} binds to must all exist in the CUDA 13.0 runtime the GPU machines
 * have: the JavaCPP 1.5.13 glue also imports 13.1-only symbols, and calling one kills the JVM.
 */
class CudaSymbolGuardTest {
  /** Imported by libjnicudart 1.5.13 but absent from CUDA 13.0's libcudart.so.13 (nm -D comparison). */
  static final List<String> MISSING_IN_CUDA_13_0 = List.of("cudaDevResourceGenerateDesc", "cudaDevSmResourceSplit",
      "cudaDevSmResourceSplitByCount", "cudaDeviceGetDevResource", "cudaDeviceGetExecutionCtx",
      "cudaExecutionCtxDestroy", "cudaExecutionCtxGetDevResource", "cudaExecutionCtxGetDevice",
      "cudaExecutionCtxGetId", "cudaExecutionCtxRecordEvent", "cudaExecutionCtxStreamCreate",
      "cudaExecutionCtxSynchronize", "cudaExecutionCtxWaitEvent", "cudaGraphConditionalHandleCreate_v2",
      "cudaGraphExecGetId", "cudaGraphGetId", "cudaGraphNodeGetContainingGraph", "cudaGraphNodeGetLocalId",
      "cudaGraphNodeGetToolsId", "cudaGreenCtxCreate", "cudaStreamGetDevResource");

  @Test
  void everyUsedSymbolExistsInCuda13_0() {
    for (Map.Entry<String, Integer> e : CudaNative.USED_SYMBOLS.entrySet()) {
      assertTrue(!MISSING_IN_CUDA_13_0.contains(e.getKey()), e.getKey() + " is missing from CUDA 13.0");
      assertTrue(e.getValue() <= CudaProbe.MIN_RUNTIME_VERSION,
          e.getKey() + " needs CUDA " + e.getValue() + " but we accept " + CudaProbe.MIN_RUNTIME_VERSION);
    }
  }

  @Test
  void usedSymbolTableCoversEveryCallInCudaNative() throws Exception {
    // Every cuda*/cu*/nccl* identifier called in JavaCppCuda (the real device) must be in the table.
    java.nio.file.Path src = java.nio.file.Path.of("src/main/java/dev/gpucoll/cuda/JavaCppCuda.java");
    String text = java.nio.file.Files.readString(src);
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?<!new )\\b((?:cuda|cu|nccl\\.nccl)[A-Z]\\w*)\\(").matcher(text);
    int calls = 0;
    while (m.find()) {
      String name = m.group(1).replace("nccl.", "");
      calls++;
      assertTrue(CudaNative.USED_SYMBOLS.containsKey(name), name + " is called but not in CudaNative.USED_SYMBOLS");
    }
    assertTrue(calls > 20, "found " + calls + " calls");
  }
}
