package dev.gpucoll.cuda;

import dev.gpucoll.api.Collective;
import dev.gpucoll.api.DataType;
import dev.gpucoll.api.PathChoice;
import dev.gpucoll.api.ReduceOp;
import dev.gpucoll.core.config.GpuCollConf;
import dev.gpucoll.core.spi.DeviceRoutes;
import dev.gpucoll.core.spi.MemberInfo;
import dev.gpucoll.cuda.eligibility.BufferRegistration;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link DeviceRoutes} of the GPU backend: a {@link GroupRoute} over the launching processes' facts
 * (their GPUs and the NCCL they loaded) answers every call, and the layout comes from
 * {@link KernelTable}, generated from the one kernel table. Needs no CUDA in this process.
 */
public final class GpuDeviceRoutes implements DeviceRoutes {

  @Override
  public Map<String, Long> abi() {
    Map<String, Long> out = new LinkedHashMap<>();
    for (Field f : KernelTable.class.getFields()) {
      int m = f.getModifiers();
      if (Modifier.isStatic(m) && (f.getType() == int.class || f.getType() == long.class)) {
        try {
          out.put(f.getName(), ((Number) f.get(null)).longValue());
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(e);
        }
      }
    }
    out.put("CONTROL_ABORT_OFFSET", (long) KernelAbi.CONTROL_ABORT_OFFSET);
    out.put("CONTROL_BYTES", (long) KernelAbi.CONTROL_BYTES);
    out.put("WORKSPACE_HEADER_BYTES", (long) GpuWorkspace.HEADER_BYTES);
    return out;
  }

  @Override
  public byte[] kernelImage() {
    return KernelImage.bytes();
  }

  @Override
  public Group group(int rank, List<MemberInfo> members, GpuCollConf conf) {
    GroupRoute route = new GroupRoute(rank, members, conf);
    return new Group() {
      @Override
      public boolean formsNccl() {
        return route.formsNccl();
      }

      @Override
      public boolean kernelsOn() {
        return route.kernelsOn();
      }

      @Override
      public int ncclCtaPolicy() {
        return route.ctaPolicy();
      }

      @Override
      public Launch route(Collective c, long count, DataType type, ReduceOp op) {
        // The launching process registers no NCCL window: its arrays are the frameworks' own memory.
        GroupRoute.Route r = route.route(c, count, type, op, BufferRegistration.NONE);
        return switch (r.kind()) {
          case KERNEL -> new Launch(Kind.KERNEL, r.algorithm().id(), r.plan().kernel(), r.plan().grid(),
              r.plan().block());
          case ONE_RANK -> new Launch(Kind.ONE_RANK, r.algorithm().id(), "", 0, 0);
          case STAGED -> new Launch(Kind.STAGED, r.algorithm().id(), "", 0, 0);
          case NCCL -> new Launch(Kind.NCCL, r.algorithm().id(), "", 0, 0);
        };
      }

      @Override
      public PathChoice explain(Collective c, long bytes) {
        return route.explain(c, bytes);
      }

      @Override
      public List<String> findings() {
        return route.findings();
      }

      @Override
      public RuntimeException error(byte[] record, Collective c) {
        ByteBuffer control = ByteBuffer.allocate(KernelAbi.CONTROL_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        control.put(0, record, 0, Math.min(record.length, KernelTable.ERR_SIZE));
        return KernelAbi.toException(control, rank, c);
      }
    };
  }
}
