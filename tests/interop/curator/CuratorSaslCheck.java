// CuratorSaslCheck is Apache Curator (CuratorFramework) authenticating with
// SASL through the ZooKeeper client under it: JAAS sections named by
// -Djava.security.auth.login.config (Krb5LoginModule for Kerberos, with
// -Djava.security.krb5.conf; DigestLoginModule works the same way).
//
// Usage: java -Djava.security.auth.login.config=FILE -cp ... CuratorSaslCheck CONNECT PATH USER OTHER_SECTION OTHER_USER
//   The first client logs in with the JAAS section "Client": after a
//   SaslAuthenticated event, it creates PATH through an ACLProvider that
//   gives every node the ACL sasl:USER:cdrwa, reads it back (data and
//   getACL) and prints its whoAmI (Curator has no whoAmI of its own: the
//   ZooKeeper handle's). A second client logs in with OTHER_SECTION
//   (ZKClientConfig's zookeeper.sasl.clientconfig): its whoAmI must show
//   sasl:OTHER_USER and reading PATH must fail with NoAuth. The first
//   client then deletes PATH.
// Prints "PASS curator ..." (whoAmI ids sorted: ZooKeeper and zkgo list a
// connection's ids in different orders) and exits 0, or "FAIL ..." and
// exits 1.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Id;

public class CuratorSaslCheck {
    static void fail(String msg) {
        System.out.println("FAIL " + msg);
        System.out.flush();
        System.exit(1);
    }

    // start builds and starts a client logging in with the JAAS section,
    // and waits for it to connect and to authenticate.
    static CuratorFramework start(String connect, String section, ACLProvider acls) throws Exception {
        ZKClientConfig cfg = new ZKClientConfig();
        cfg.setProperty(ZKClientConfig.LOGIN_CONTEXT_NAME_KEY, section);
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(10000)
            .connectionTimeoutMs(15000)
            .retryPolicy(new RetryNTimes(3, 500))
            .aclProvider(acls)
            .zkClientConfig(cfg)
            .build();
        CountDownLatch sasl = new CountDownLatch(1);
        CountDownLatch authFailed = new CountDownLatch(1);
        // Curator hands every event of the ZooKeeper handle's default
        // watcher, SaslAuthenticated included, to its CuratorListeners.
        c.getCuratorListenable().addListener((client, ev) -> {
            if (ev.getType() != CuratorEventType.WATCHED || ev.getWatchedEvent() == null) {
                return;
            }
            Watcher.Event.KeeperState s = ev.getWatchedEvent().getState();
            if (s == Watcher.Event.KeeperState.SaslAuthenticated) {
                sasl.countDown();
            } else if (s == Watcher.Event.KeeperState.AuthFailed) {
                authFailed.countDown();
            }
        });
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            fail(section + ": not connected after 30s");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (sasl.getCount() > 0 && System.nanoTime() < deadline) {
            if (authFailed.getCount() == 0) {
                fail(section + ": AuthFailed");
            }
            sasl.await(50, TimeUnit.MILLISECONDS);
        }
        if (sasl.getCount() > 0) {
            fail(section + ": no SaslAuthenticated event in 30s");
        }
        return c;
    }

    // whoAmI returns the client's ids, sorted, and fails unless sasl:user
    // is among them.
    static String whoAmI(CuratorFramework c, String user) throws Exception {
        List<String> ids = new ArrayList<>();
        for (ClientInfo ci : c.getZookeeperClient().getZooKeeper().whoAmI()) {
            ids.add(ci.getAuthScheme() + ":" + ci.getUser());
        }
        Collections.sort(ids);
        String who = "[" + String.join(" ", ids) + "]";
        if (!ids.contains("sasl:" + user)) {
            fail("whoAmI " + who + " lacks sasl:" + user);
        }
        return who;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            fail("usage: CuratorSaslCheck CONNECT PATH USER OTHER_SECTION OTHER_USER");
        }
        String connect = args[0], path = args[1], user = args[2], otherSection = args[3], otherUser = args[4];
        List<ACL> acl = Collections.singletonList(new ACL(ZooDefs.Perms.ALL, new Id("sasl", user)));
        ACLProvider saslOnly = new ACLProvider() {
            @Override
            public List<ACL> getDefaultAcl() {
                return acl;
            }

            @Override
            public List<ACL> getAclForPath(String p) {
                return acl;
            }
        };
        CuratorFramework c = start(connect, "Client", saslOnly);
        CuratorFramework other = null;
        try {
            String who = whoAmI(c, user);
            c.create().forPath(path, "curator".getBytes(StandardCharsets.UTF_8));
            String data = new String(c.getData().forPath(path), StandardCharsets.UTF_8);
            if (!data.equals("curator")) {
                fail("getData " + path + " = " + data);
            }
            List<ACL> got = c.getACL().forPath(path);
            if (!got.equals(acl)) {
                fail("getACL " + path + " = " + got + ", want " + acl);
            }
            other = start(connect, otherSection, saslOnly);
            String otherWho = whoAmI(other, otherUser);
            String otherRead;
            try {
                other.getData().forPath(path);
                otherRead = "read it";
            } catch (KeeperException.NoAuthException e) {
                otherRead = "NoAuth";
            }
            if (!otherRead.equals("NoAuth")) {
                fail(otherSection + " as " + otherUser + " reads " + path + ": " + otherRead + ", want NoAuth");
            }
            c.delete().forPath(path);
            System.out.println("PASS curator: whoAmI " + who + ", ACL " + got.get(0).getId().getScheme() + ":"
                + got.get(0).getId().getId() + ":" + got.get(0).getPerms() + ", data " + data
                + "; other whoAmI " + otherWho + " reads: " + otherRead);
        } finally {
            if (other != null) {
                other.close();
            }
            c.close();
        }
    }
}
