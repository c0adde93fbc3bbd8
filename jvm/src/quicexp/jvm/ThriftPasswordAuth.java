package quicexp.jvm;

import java.io.IOException;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * HiveServer2 CUSTOM authentication of the quicexp Thrift server: the logins of {@link Logins}
 * (each with a role, its password as a PBKDF2 key, a password file or inline), read again when
 * the file changes, so an added or rotated login takes effect without a restart. A missing or
 * unreadable file refuses every login (fail closed); a wrong user and a wrong password get the
 * same answer, after the same work.
 */
public final class ThriftPasswordAuth implements PasswdAuthenticationProvider {
  /** A key the unknown users' passwords are checked against, so they cost what a known user costs. */
  private static final Logins.Login NOBODY = new Logins.Login(null,
      "sha256:100000:bm8tc3VjaC11c2Vy:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", null, null);

  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    Logins logins;
    try {
      logins = Logins.current();
    } catch (IOException e) {
      throw new AuthenticationException("quicexp: cannot read the logins file: " + e.getMessage());
    }
    Logins.Login login = user == null ? null : logins.logins.get(user);
    boolean known = login != null && login.role != null
        && (login.pbkdf2 != null || login.password != null || login.passwordFile != null);
    boolean ok;
    try {
      ok = password != null && !password.isEmpty() && Logins.matches(known ? login : NOBODY, password);
    } catch (IOException e) {
      throw new AuthenticationException("quicexp: " + e.getMessage());
    }
    if (!(known & ok)) {
      throw new AuthenticationException("quicexp: wrong user name or password");
    }
  }
}
