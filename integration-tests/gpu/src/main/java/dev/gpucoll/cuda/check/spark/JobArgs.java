package dev.gpucoll.cuda.check.spark;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * The GPU jobs' command lines: flags that take a value and switches; an unknown argument fails
 * with the job's usage, a flag without its value names the flag.
 */
final class JobArgs {
  private final Map<String, String> values = new HashMap<>();

  private JobArgs() {}

  static JobArgs parse(String[] args, Set<String> valued, Set<String> switches, String usage) {
    JobArgs a = new JobArgs();
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      if (valued.contains(flag)) {
        if (++i >= args.length) {
          throw new IllegalArgumentException(flag + " needs a value");
        }
        a.values.put(flag, args[i]);
      } else if (switches.contains(flag)) {
        a.values.put(flag, "");
      } else {
        throw new IllegalArgumentException("unknown argument " + flag + "; usage: " + usage);
      }
    }
    return a;
  }

  boolean has(String flag) {
    return values.containsKey(flag);
  }

  int intValue(String flag, int absent) {
    return has(flag) ? Integer.parseInt(values.get(flag)) : absent;
  }

  long longValue(String flag, long absent) {
    return has(flag) ? Long.parseLong(values.get(flag)) : absent;
  }
}
