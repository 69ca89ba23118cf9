package dev.gpucoll.core.objects;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;

/**
 * Java serialization. Classes are resolved through the thread's context class loader first, so
 * user classes load where the application class loader cannot see them (as in Spark executors).
 */
public final class JavaObjectSerializer implements ObjectSerializer {

  @Override
  public String name() {
    return "java";
  }

  @Override
  public byte[] serialize(Object value) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(value);
    }
    return bytes.toByteArray();
  }

  @Override
  public Object deserialize(byte[] bytes) throws IOException, ClassNotFoundException {
    try (ObjectInputStream in = new ContextLoaderInput(new ByteArrayInputStream(bytes))) {
      return in.readObject();
    }
  }

  private static final class ContextLoaderInput extends ObjectInputStream {
    ContextLoaderInput(InputStream in) throws IOException {
      super(in);
    }

    @Override
    protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
      ClassLoader loader = Thread.currentThread().getContextClassLoader();
      if (loader != null) {
        try {
          return Class.forName(desc.getName(), false, loader);
        } catch (ClassNotFoundException e) {
          // fall through to the default lookup (primitives, the caller's loader)
        }
      }
      return super.resolveClass(desc);
    }
  }
}
