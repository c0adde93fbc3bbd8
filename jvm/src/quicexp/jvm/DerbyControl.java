package quicexp.jvm;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Properties;

/**
 * Derby's network-server control commands with the metastore's credentials, read from the
 * server's {@code derby.properties} (user {@code app}), so the password is never on a command line.
 *
 * <p>{@code java -cp <derby jars>:<quicexp jar> quicexp.jvm.DerbyControl HOST PORT DERBY_PROPERTIES
 * COMMAND [ARG]}, COMMAND one of shutdown, ping, runtimeinfo, sysinfo, trace on|off,
 * logconnections on|off, maxthreads N, timeslice N. Exit 0 when the server did it (what it
 * answered on stdout), 1 when it refused (its message on stderr), 2 on bad arguments.
 *
 * <p>{@code shutdown} goes through Derby's own client ({@code NetworkServerControl}, by
 * reflection), which sends the credentials and waits for the server to stop. The other commands
 * are written here, in Derby's command protocol (a {@code CMD:} frame: protocol version, locale,
 * command code, arguments; a {@code RPY:} frame back: status, then the answer), after the
 * {@code QXA:} frame with the credentials that the server's {@link DerbyCommandGate} asks for:
 * Derby's client cannot be made to send it (its SSL modes end on a plain socket either way).
 */
public final class DerbyControl {
  private DerbyControl() {}

  /** Command -> Derby's command code (NetworkServerControlImpl.COMMAND_*). */
  static final Map<String, Integer> CODES = Map.of(
      "trace", 2, "ping", 4, "logconnections", 5, "sysinfo", 6, "runtimeinfo", 7, "maxthreads", 8, "timeslice", 9);

  public static void main(String[] args) throws Exception {
    if (args.length < 4) {
      usage("usage: DerbyControl HOST PORT DERBY_PROPERTIES COMMAND [ARG]");
    }
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(Paths.get(args[2]))) {
      props.load(in);
    }
    String password = props.getProperty("derby.user.app");
    if (password == null) {
      usage("DerbyControl: " + args[2] + " names no password for derby.user.app");
    }
    InetAddress host = InetAddress.getByName(args[0]);
    int port = Integer.parseInt(args[1]);
    String command = args[3];
    String arg = args.length > 4 ? args[4] : null;
    if (command.equals("shutdown")) {
      shutdown(host, port, password);
      return;
    }
    Integer code = CODES.get(command);
    if (code == null) {
      usage("DerbyControl: unknown command " + command);
    }
    try (Socket socket = new Socket(host, port)) {
      DataOutputStream out = new DataOutputStream(socket.getOutputStream());
      // The gate answers wrong credentials with a refusal and closes the socket, which can
      // break the rest of this request mid-write: its answer is then read below all the same.
      try {
        out.write(DerbyCommandGate.AUTH);
        writeString(out, "app");
        writeString(out, password);
        out.write(DerbyCommandGate.COMMAND);
        out.writeShort(1); // protocol version
        out.writeByte(0); // default locale
        out.writeByte(0);
        out.writeByte(code);
        switch (command) {
          case "trace": out.writeInt(0); out.writeByte(onOff(arg) ? 1 : 0); break; // all sessions
          case "logconnections": out.writeByte(onOff(arg) ? 1 : 0); break;
          case "maxthreads":
          case "timeslice": out.writeInt(number(arg)); break;
          case "ping": out.writeShort(0); out.writeShort(0); out.writeShort(0); break; // no database, user, password
          default: break;
        }
        out.flush();
      } catch (IOException e) {
        // the refusal, if the server sent one, is in the socket's receive buffer
      }
      DataInputStream in = new DataInputStream(socket.getInputStream());
      byte[] header = new byte[4];
      int status;
      try {
        in.readFully(header);
        status = in.readUnsignedByte();
      } catch (IOException e) { // EOF, or a reset after the server closed
        fail(command + ": the server closed the connection without an answer");
        return;
      }
      if (!new String(header, StandardCharsets.US_ASCII).equals("RPY:")) {
        fail(command + ": not a Derby network server's answer");
      }
      if (status != 0) {
        String message;
        try {
          message = readString(in);
        } catch (IOException e) {
          message = "refused (the server closed the connection)";
        }
        fail(command + ": " + message);
      }
      if (command.equals("sysinfo") || command.equals("runtimeinfo")) {
        System.out.println(readString(in));
      } else if (command.equals("maxthreads") || command.equals("timeslice")) {
        System.out.println(in.readInt());
      }
    }
    System.exit(0);
  }

  private static void shutdown(InetAddress host, int port, String password) throws Exception {
    Class<?> control = Class.forName("org.apache.derby.drda.NetworkServerControl");
    Constructor<?> make = control.getConstructor(InetAddress.class, int.class, String.class, String.class);
    Object server = make.newInstance(host, port, "app", password);
    try {
      control.getMethod("shutdown").invoke(server);
    } catch (InvocationTargetException e) {
      fail("shutdown: " + (e.getCause() == null ? e : e.getCause()).getMessage());
    }
    System.exit(0);
  }

  private static void writeString(DataOutputStream out, String value) throws IOException {
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    out.writeShort(bytes.length);
    out.write(bytes);
  }

  private static String readString(DataInputStream in) throws IOException {
    byte[] bytes = new byte[in.readUnsignedShort()];
    in.readFully(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static boolean onOff(String arg) {
    if (!"on".equals(arg) && !"off".equals(arg)) {
      usage("DerbyControl: expected on or off, got " + arg);
    }
    return "on".equals(arg);
  }

  private static int number(String arg) {
    try {
      return Integer.parseInt(arg);
    } catch (NumberFormatException e) {
      usage("DerbyControl: expected a number, got " + arg);
      return 0;
    }
  }

  private static void usage(String message) {
    System.err.println(message);
    System.exit(2);
  }

  private static void fail(String message) {
    System.err.println("DerbyControl: " + message);
    System.exit(1);
  }
}
