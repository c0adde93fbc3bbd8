package quicexp.jvm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.Properties;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * HiveServer2 CUSTOM authentication of the quicexp Thrift server: one user name and password,
 * generated at setup into a file of mode 0600 (quicexp.app.serve).
 *
 * <p>The file is named by the system property {@code quicexp.thrift.credentials} (the server sets
 * it with {@code --hiveconf}, which HiveServer2 turns into a system property) or the environment
 * variable {@code QUICEXP_THRIFT_CREDENTIALS}. It is a Java properties file with {@code user} and
 * either {@code password} or {@code password_file}: the path of a file whose first line is the
 * password (a docker compose secret, read where it is, so the secret is never copied). Both files
 * are read at every login, so a rotated password takes effect without a restart. A missing or
 * unreadable file refuses every login (fail closed).
 */
public final class ThriftPasswordAuth implements PasswdAuthenticationProvider {
  static final String PROPERTY = "quicexp.thrift.credentials";
  static final String VARIABLE = "QUICEXP_THRIFT_CREDENTIALS";

  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    Properties expected = load();
    String wantUser = expected.getProperty("user");
    String wantPassword = expected.getProperty("password");
    if (wantPassword == null && expected.getProperty("password_file") != null) {
      wantPassword = firstLine(Paths.get(expected.getProperty("password_file")));
    }
    if (wantUser == null || wantPassword == null || wantPassword.isEmpty()) {
      throw new AuthenticationException("quicexp: the Thrift server's credentials file lacks user or password");
    }
    // Both compared in constant time, both always compared: no early exit that tells which was wrong.
    boolean userOk = MessageDigest.isEqual(bytes(user), bytes(wantUser));
    boolean passwordOk = MessageDigest.isEqual(bytes(password), bytes(wantPassword));
    if (!(userOk & passwordOk)) {
      throw new AuthenticationException("quicexp: wrong user name or password");
    }
  }

  private static byte[] bytes(String value) {
    return value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8);
  }

  private static String firstLine(Path path) throws AuthenticationException {
    try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      String line = in.readLine();
      return line == null ? "" : line;
    } catch (IOException e) {
      throw new AuthenticationException("quicexp: cannot read the password file " + path);
    }
  }

  private static Properties load() throws AuthenticationException {
    String name = System.getProperty(PROPERTY);
    if (name == null || name.isEmpty()) {
      name = System.getenv(VARIABLE);
    }
    if (name == null || name.isEmpty()) {
      throw new AuthenticationException("quicexp: no credentials file configured (" + PROPERTY + ")");
    }
    Path path = Paths.get(name);
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(path)) {
      props.load(in);
    } catch (IOException e) {
      throw new AuthenticationException("quicexp: cannot read the credentials file " + path);
    }
    return props;
  }
}
