// SaslCheck is a plain ZooKeeper Java client (no Curator) configured the way
// ZooKeeper's documentation configures SASL DIGEST-MD5: a JAAS "Client"
// section with DigestLoginModule, named by -Djava.security.auth.login.config.
// It checks what a server makes of those credentials.
//
// Usage: java -Djava.security.auth.login.config=FILE -cp ... SaslCheck CONNECT PATH USER EXPECT
//   EXPECT "ok":         a SaslAuthenticated event arrives; whoAmI lists sasl:USER;
//                        PATH is created with the ACL sasl:USER:cdrwa and read
//                        back; PATH-creator with CREATOR_ALL_ACL gets the same ACL.
//                        PATH is left in place for the caller to check.
//   EXPECT "authfailed": an AuthFailed event arrives and the client ends in
//                        state AUTH_FAILED.
// Prints "PASS ..." and exits 0, or "FAIL ..." and exits 1.

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class SaslCheck {
    static void fail(String msg) {
        System.out.println("FAIL " + msg);
        System.out.flush();
        System.exit(1);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            fail("usage: SaslCheck CONNECT PATH USER ok|authfailed");
        }
        String connect = args[0], path = args[1], user = args[2], expect = args[3];
        CountDownLatch saslOK = new CountDownLatch(1);
        CountDownLatch authFailed = new CountDownLatch(1);
        Watcher watcher = ev -> {
            if (ev.getType() != Watcher.Event.EventType.None) {
                return;
            }
            switch (ev.getState()) {
                case SaslAuthenticated:
                    saslOK.countDown();
                    break;
                case AuthFailed:
                    authFailed.countDown();
                    break;
                default:
                    break;
            }
        };
        ZooKeeper zk = new ZooKeeper(connect, 10000, watcher);
        try {
            if (expect.equals("authfailed")) {
                if (!authFailed.await(30, TimeUnit.SECONDS)) {
                    fail("no AuthFailed event; state " + zk.getState());
                }
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (zk.getState() != ZooKeeper.States.AUTH_FAILED && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                if (zk.getState() != ZooKeeper.States.AUTH_FAILED) {
                    fail("state " + zk.getState() + ", want AUTH_FAILED");
                }
                if (saslOK.getCount() == 0) {
                    fail("SaslAuthenticated as well as AuthFailed");
                }
                System.out.println("PASS authfailed: state " + zk.getState());
                return;
            }
            if (!saslOK.await(30, TimeUnit.SECONDS)) {
                fail("no SaslAuthenticated event; state " + zk.getState());
            }
            StringBuilder who = new StringBuilder();
            boolean found = false;
            for (ClientInfo ci : zk.whoAmI()) {
                who.append(who.length() > 0 ? " " : "").append(ci.getAuthScheme()).append(':').append(ci.getUser());
                if (ci.getAuthScheme().equals("sasl") && ci.getUser().equals(user)) {
                    found = true;
                }
            }
            if (!found) {
                fail("whoAmI [" + who + "] lacks sasl:" + user);
            }
            List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", user)));
            zk.create(path, "sasl".getBytes(StandardCharsets.UTF_8), acl, CreateMode.PERSISTENT);
            List<ACL> got = zk.getACL(path, null);
            if (!got.equals(acl)) {
                fail("getACL " + path + " = " + got);
            }
            String data = new String(zk.getData(path, false, null), StandardCharsets.UTF_8);
            if (!data.equals("sasl")) {
                fail("getData " + path + " = " + data);
            }
            String creator = path + "-creator";
            zk.create(creator, new byte[0], ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            got = zk.getACL(creator, null);
            zk.delete(creator, -1);
            if (!got.equals(acl)) {
                fail("CREATOR_ALL_ACL became " + got);
            }
            System.out.println("PASS ok: whoAmI [" + who + "], ACL " + got.get(0).getId().getScheme() + ":"
                + got.get(0).getId().getId() + ":" + got.get(0).getPerms());
        } finally {
            zk.close();
        }
    }
}
