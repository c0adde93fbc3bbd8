package quicexp.jvm;

import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Properties;

/**
 * Shuts a quicexp Derby network server down with its credentials read from the server's
 * {@code derby.properties} (user {@code app}), so the password never appears on a command line.
 *
 * <p>{@code java -cp <derby jars>:<quicexp jar> quicexp.jvm.DerbyShutdown HOST PORT DERBY_PROPERTIES}
 *
 * <p>Derby's own {@code NetworkServerControl shutdown} takes the password as an argument only.
 * Reflection keeps this class free of a compile-time dependency on derbynet.
 */
public final class DerbyShutdown {
  private DerbyShutdown() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: DerbyShutdown HOST PORT DERBY_PROPERTIES");
      System.exit(2);
    }
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(Paths.get(args[2]))) {
      props.load(in);
    }
    String password = props.getProperty("derby.user.app");
    Class<?> control = Class.forName("org.apache.derby.drda.NetworkServerControl");
    Constructor<?> make = control.getConstructor(InetAddress.class, int.class, String.class, String.class);
    Object server = make.newInstance(InetAddress.getByName(args[0]), Integer.parseInt(args[1]), "app", password);
    control.getMethod("shutdown").invoke(server);
  }
}
