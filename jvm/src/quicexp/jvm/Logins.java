package quicexp.jvm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;

/**
 * The Thrift endpoint's logins and their roles: one Java properties file, 0600, named by the
 * system property {@code quicexp.thrift.credentials} (HiveServer2 turns {@code --hiveconf} into
 * system properties) or the variable {@code QUICEXP_THRIFT_CREDENTIALS}; read again whenever it
 * changes, so a login added or rotated takes effect without a restart.
 *
 * <pre>
 * login.analyst.role=analyst
 * login.analyst.pbkdf2=sha256:&lt;iterations&gt;:&lt;salt, base64&gt;:&lt;key, base64&gt;
 * login.superset.role=superset
 * login.superset.password_file=/run/secrets/thrift_superset_password
 * login.alice.role=analyst            # no password: authenticated by LDAP (hive.server2.authentication=LDAP)
 * default.role=analyst                # optional: the role of LDAP users not listed
 * </pre>
 *
 * A password is one of {@code pbkdf2} (PBKDF2-HMAC-SHA256, what {@code quicexp serve} writes: the
 * server's file then holds no password), {@code password_file} (the first line of that file: a
 * docker compose secret, read where it is) or {@code password} (inline). The single-login form
 * of earlier versions ({@code user}, {@code password} or {@code password_file}, optional
 * {@code role}, default analyst) is read too. A missing or unreadable file refuses every login
 * and gives no role to anyone (fail closed).
 */
final class Logins {
  static final String PROPERTY = "quicexp.thrift.credentials";
  static final String VARIABLE = "QUICEXP_THRIFT_CREDENTIALS";

  /** What a login may do beyond read-only queries, SHOW/DESCRIBE and USE (SqlPolicy). */
  enum Role {
    ANALYST("analyst", true, true),
    SUPERSET("superset", false, false);

    final String name;
    /** CREATE / DROP TEMPORARY VIEW over allowed queries (session state of one connection). */
    final boolean tempViews;
    /** SET / RESET of SqlPolicy.SESSION_OPTIONS. */
    final boolean sessionOptions;

    Role(String name, boolean tempViews, boolean sessionOptions) {
      this.name = name;
      this.tempViews = tempViews;
      this.sessionOptions = sessionOptions;
    }

    static Role of(String name) {
      for (Role role : values()) {
        if (role.name.equals(name == null ? null : name.trim().toLowerCase(Locale.ROOT))) {
          return role;
        }
      }
      return null;
    }
  }

  /** One login: its role and how its password is checked (all null: authenticated elsewhere). */
  static final class Login {
    final Role role;
    final String pbkdf2;
    final String password;
    final String passwordFile;

    Login(Role role, String pbkdf2, String password, String passwordFile) {
      this.role = role;
      this.pbkdf2 = pbkdf2;
      this.password = password;
      this.passwordFile = passwordFile;
    }
  }

  final Map<String, Login> logins;
  final Role defaultRole;

  private Logins(Map<String, Login> logins, Role defaultRole) {
    this.logins = logins;
    this.defaultRole = defaultRole;
  }

  static Path file() {
    String name = System.getProperty(PROPERTY);
    if (name == null || name.isEmpty()) {
      name = System.getenv(VARIABLE);
    }
    return name == null || name.isEmpty() ? null : Paths.get(name);
  }

  private static Logins cached;
  private static Path cachedPath;
  private static FileTime cachedTime;
  private static long cachedSize = -1;

  /** The logins of the configured file (cached while its path, mtime and size stay the same). */
  static synchronized Logins current() throws IOException {
    Path path = file();
    if (path == null) {
      throw new IOException("no logins file configured (" + PROPERTY + ")");
    }
    FileTime time = Files.getLastModifiedTime(path);
    long size = Files.size(path);
    if (cached == null || !path.equals(cachedPath) || !time.equals(cachedTime) || size != cachedSize) {
      Properties props = new Properties();
      try (InputStream in = Files.newInputStream(path)) {
        props.load(in);
      }
      cached = parse(props);
      cachedPath = path;
      cachedTime = time;
      cachedSize = size;
    }
    return cached;
  }

  static Logins parse(Properties props) {
    Map<String, Login> logins = new LinkedHashMap<>();
    String single = props.getProperty("user");
    if (single != null && !single.trim().isEmpty()) {
      String role = props.getProperty("role", "analyst");
      logins.put(single.trim(), new Login(Role.of(role), null, props.getProperty("password"),
          props.getProperty("password_file")));
    }
    for (String key : props.stringPropertyNames()) {
      if (key.startsWith("login.") && key.endsWith(".role")) {
        String name = key.substring("login.".length(), key.length() - ".role".length());
        String prefix = "login." + name + ".";
        logins.put(name, new Login(Role.of(props.getProperty(key)), props.getProperty(prefix + "pbkdf2"),
            props.getProperty(prefix + "password"), props.getProperty(prefix + "password_file")));
      }
    }
    return new Logins(Collections.unmodifiableMap(logins), Role.of(props.getProperty("default.role")));
  }

  /** The role of an authenticated user (null: none, every statement but USE is refused). */
  Role roleOf(String user) {
    if (user == null || user.isEmpty()) {
      return null;
    }
    Login login = logins.get(user);
    return login != null ? login.role : defaultRole;
  }

  /** True when ``password`` is the login's: compared in constant time (a PBKDF2 key or the bytes). */
  static boolean matches(Login login, String password) throws IOException {
    if (login.pbkdf2 != null) {
      String[] parts = login.pbkdf2.split(":");
      if (parts.length != 4 || !parts[0].equals("sha256")) {
        throw new IOException("a pbkdf2 entry is sha256:<iterations>:<salt>:<key>");
      }
      byte[] want = Base64.getDecoder().decode(parts[3]);
      byte[] got = pbkdf2(password, Base64.getDecoder().decode(parts[2]), Integer.parseInt(parts[1]), want.length);
      return MessageDigest.isEqual(got, want);
    }
    String want = login.password;
    if (want == null && login.passwordFile != null) {
      want = firstLine(Paths.get(login.passwordFile));
    }
    if (want == null || want.isEmpty()) {
      throw new IOException("no password for this login in the logins file");
    }
    return MessageDigest.isEqual(password.getBytes(StandardCharsets.UTF_8), want.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] pbkdf2(String password, byte[] salt, int iterations, int bytes) throws IOException {
    try {
      PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, iterations, bytes * 8);
      return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
    } catch (GeneralSecurityException e) {
      throw new IOException("PBKDF2WithHmacSHA256 is not available: " + e.getMessage());
    }
  }

  private static String firstLine(Path path) throws IOException {
    try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      String line = in.readLine();
      return line == null ? "" : line;
    } catch (IOException e) {
      throw new IOException("cannot read the password file " + path);
    }
  }
}
