package quicexp.jvm;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.Properties;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLServerSocketFactory;

/**
 * The Derby network server's control commands behind the metastore's credentials.
 *
 * <p>Derby's server takes control commands ({@code NetworkServerControl runtimeinfo | sysinfo |
 * trace | logconnections | maxthreads | timeslice | tracedirectory | ping}) from any local
 * process without credentials; only {@code shutdown} checks them (Derby 10.16). A command
 * arrives on the server's one port as a frame beginning {@code CMD:}, DRDA (JDBC) traffic never
 * does. This gate reads the first bytes of every connection: DRDA passes untouched, and so do
 * {@code shutdown} (Derby checks its credentials itself) and {@code ping} (it says only that
 * the server answers, as a TCP connection does); any other command passes only after a
 * {@code QXA:} frame with the user and password of {@code derby.properties} (sent by
 * {@link DerbyControl}), and is otherwise answered with a refusal and the connection closed.
 *
 * <p>How it is plugged in: Derby creates its listening socket with
 * {@code SSLServerSocketFactory.getDefault()} when {@code derby.drda.sslMode=basic}, and the
 * JDK's default is the class named by the security property
 * {@code ssl.ServerSocketFactory.provider}: this class. Its sockets are plain TCP sockets (the
 * server listens on a loopback address only), so JDBC clients connect as before, with
 * {@code ssl=off}; Derby's sysinfo shows {@code sslMode=basic}, which here means "gated".
 * quicexp.catalog starts the server so.
 */
public final class DerbyCommandGate extends SSLServerSocketFactory {
  static final byte[] COMMAND = "CMD:".getBytes(StandardCharsets.US_ASCII);
  static final byte[] AUTH = "QXA:".getBytes(StandardCharsets.US_ASCII);
  /** Derby's command codes (NetworkServerControlImpl.COMMAND_*) that pass without the gate's credentials. */
  static final int SHUTDOWN = 1;
  static final int PING = 4;
  static final String REFUSED = "quicexp: this metastore server's control commands need its credentials"
      + " (quicexp.jvm.DerbyControl reads them from derby.properties)";

  public DerbyCommandGate() {}

  @Override
  public ServerSocket createServerSocket() throws IOException {
    return new GateServerSocket();
  }

  @Override
  public ServerSocket createServerSocket(int port) throws IOException {
    return new GateServerSocket(port, 50, null);
  }

  @Override
  public ServerSocket createServerSocket(int port, int backlog) throws IOException {
    return new GateServerSocket(port, backlog, null);
  }

  @Override
  public ServerSocket createServerSocket(int port, int backlog, InetAddress address) throws IOException {
    return new GateServerSocket(port, backlog, address);
  }

  @Override
  public String[] getDefaultCipherSuites() {
    return new String[0];
  }

  @Override
  public String[] getSupportedCipherSuites() {
    return new String[0];
  }

  /** A plain listening socket (typed as the SSL one Derby expects) that accepts gated sockets. */
  static final class GateServerSocket extends SSLServerSocket {
    GateServerSocket() throws IOException {
      super();
    }

    GateServerSocket(int port, int backlog, InetAddress address) throws IOException {
      super(port, backlog, address);
    }

    @Override
    public Socket accept() throws IOException {
      if (isClosed()) {
        throw new SocketException("Socket is closed");
      }
      Socket socket = new GateSocket();
      implAccept(socket);
      return socket;
    }

    @Override public String[] getEnabledCipherSuites() { return new String[0]; }
    @Override public void setEnabledCipherSuites(String[] suites) {}
    @Override public String[] getSupportedCipherSuites() { return new String[0]; }
    @Override public String[] getSupportedProtocols() { return new String[0]; }
    @Override public String[] getEnabledProtocols() { return new String[0]; }
    @Override public void setEnabledProtocols(String[] protocols) {}
    @Override public void setNeedClientAuth(boolean need) {}
    @Override public boolean getNeedClientAuth() { return false; }
    @Override public void setWantClientAuth(boolean want) {}
    @Override public boolean getWantClientAuth() { return false; }
    @Override public void setUseClientMode(boolean mode) {}
    @Override public boolean getUseClientMode() { return false; }
    @Override public void setEnableSessionCreation(boolean flag) {}
    @Override public boolean getEnableSessionCreation() { return false; }
  }

  /** An accepted connection whose input passes the gate before Derby reads it. */
  static final class GateSocket extends Socket {
    private InputStream gated;

    @Override
    public synchronized InputStream getInputStream() throws IOException {
      if (gated == null) {
        gated = new GateInputStream(super.getInputStream(), this);
      }
      return gated;
    }
  }

  /** Decides on the first bytes, then replays them and passes the rest through. */
  static final class GateInputStream extends FilterInputStream {
    private final Socket socket;
    private byte[] head;
    private int pos;
    private boolean decided;

    GateInputStream(InputStream in, Socket socket) {
      super(in);
      this.socket = socket;
    }

    @Override
    public int read() throws IOException {
      decide();
      if (pos < head.length) {
        return head[pos++] & 0xff;
      }
      return super.read();
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      decide();
      if (length == 0) {
        return 0;
      }
      if (pos < head.length) {
        int n = Math.min(length, head.length - pos);
        System.arraycopy(head, pos, buffer, offset, n);
        pos += n;
        return n;
      }
      return super.read(buffer, offset, length);
    }

    @Override
    public int available() throws IOException {
      return decided ? head.length - pos + super.available() : 0;
    }

    private synchronized void decide() throws IOException {
      if (decided) {
        return;
      }
      DataInputStream data = new DataInputStream(in);
      ByteArrayOutputStream seen = new ByteArrayOutputStream();
      byte[] first = readUpTo(data, 4);
      boolean authorised = false;
      if (java.util.Arrays.equals(first, AUTH)) {
        String user = readString(data);
        String password = readString(data);
        if (!credentialsMatch(user, password)) {
          refuse("quicexp: wrong metastore user or password");
        }
        authorised = true;
        first = readUpTo(data, 4);
      }
      seen.write(first);
      if (!authorised && java.util.Arrays.equals(first, COMMAND)) {
        // CMD: | protocol version (2) | locale length (1) [locale] | (1) | command (1)
        byte[] version = readUpTo(data, 2);
        seen.write(version);
        int localeLength = data.readUnsignedByte();
        seen.write(localeLength);
        seen.write(readUpTo(data, localeLength));
        int reserved = data.readUnsignedByte();
        seen.write(reserved);
        int command = data.readUnsignedByte();
        seen.write(command);
        if (command != SHUTDOWN && command != PING) {
          refuse(REFUSED);
        }
      }
      head = seen.toByteArray();
      pos = 0;
      decided = true;
    }

    /** Answer as Derby answers a failed command (a reply frame with a message), then hang up. */
    private void refuse(String message) throws IOException {
      try {
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        out.write("RPY:".getBytes(StandardCharsets.US_ASCII));
        out.writeByte(2);
        out.writeShort(text.length);
        out.write(text);
        out.flush();
      } finally {
        socket.close();
      }
      throw new SocketException(message);
    }

    private static byte[] readUpTo(DataInputStream data, int n) throws IOException {
      byte[] bytes = new byte[n];
      data.readFully(bytes);
      return bytes;
    }

    private static String readString(DataInputStream data) throws IOException {
      int length = data.readUnsignedShort();
      return new String(readUpTo(data, length), StandardCharsets.UTF_8);
    }
  }

  /** The user's password in {@code <derby.system.home>/derby.properties} (BUILTIN users), compared in constant time. */
  static boolean credentialsMatch(String user, String password) {
    String home = System.getProperty("derby.system.home");
    if (home == null || user == null || password == null || password.isEmpty()) {
      return false;
    }
    Path file = Paths.get(home, "derby.properties");
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      props.load(in);
    } catch (IOException e) {
      return false;
    }
    String want = props.getProperty("derby.user." + user);
    byte[] got = password.getBytes(StandardCharsets.UTF_8);
    boolean ok = MessageDigest.isEqual(got, (want == null ? "" : want).getBytes(StandardCharsets.UTF_8));
    return want != null && ok;
  }
}
