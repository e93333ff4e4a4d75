// TlsCheck is the ZooKeeper Java client and Curator configured for TLS the
// way ZooKeeper's SSL guide configures them (ZKClientConfig with
// zookeeper.client.secure, the Netty socket and zookeeper.ssl.* stores),
// with a client certificate. It checks what a server makes of it.
//
// Usage: java -cp ... TlsCheck CONNECT PATH KEYSTORE TRUSTSTORE STORETYPE PASSWORD SUBJECT
//   Connects over TLS; whoAmI must list x509:SUBJECT; PATH is created with
//   CREATOR_ALL_ACL, whose ACL must be x509:SUBJECT, and read back; then
//   Curator (zkClientConfig) takes and releases an InterProcessMutex under
//   PATH-lock. PATH is left in place for the caller to check.
// Prints "PASS ..." and exits 0, or "FAIL ..." and exits 1.

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.ClientInfo;
import org.apache.zookeeper.data.Stat;

public class TlsCheck {
    static void fail(String msg) {
        System.out.println("FAIL " + msg);
        System.out.flush();
        System.exit(1);
    }

    static ZKClientConfig tlsConfig(String keyStore, String trustStore, String type, String password) {
        ZKClientConfig cfg = new ZKClientConfig();
        cfg.setProperty("zookeeper.client.secure", "true");
        cfg.setProperty("zookeeper.clientCnxnSocket", "org.apache.zookeeper.ClientCnxnSocketNetty");
        cfg.setProperty("zookeeper.ssl.keyStore.location", keyStore);
        cfg.setProperty("zookeeper.ssl.keyStore.type", type);
        cfg.setProperty("zookeeper.ssl.trustStore.location", trustStore);
        cfg.setProperty("zookeeper.ssl.trustStore.type", type);
        if (!password.isEmpty()) {
            cfg.setProperty("zookeeper.ssl.keyStore.password", password);
            cfg.setProperty("zookeeper.ssl.trustStore.password", password);
        }
        return cfg;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            fail("usage: TlsCheck CONNECT PATH KEYSTORE TRUSTSTORE STORETYPE PASSWORD SUBJECT");
        }
        String connect = args[0], path = args[1], subject = args[6];
        ZKClientConfig cfg = tlsConfig(args[2], args[3], args[4], args[5]);
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = ev -> {
            if (ev.getType() == Watcher.Event.EventType.None && ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        ZooKeeper zk = new ZooKeeper(connect, 10000, watcher, cfg);
        try {
            if (!connected.await(20, TimeUnit.SECONDS)) {
                fail("no TLS connection to " + connect + " within 20s");
            }
            boolean found = false;
            for (ClientInfo ci : zk.whoAmI()) {
                found |= ci.getAuthScheme().equals("x509") && ci.getUser().equals(subject);
            }
            if (!found) {
                fail("whoAmI has no x509:" + subject + ": " + zk.whoAmI());
            }
            zk.create(path, "tls".getBytes(StandardCharsets.UTF_8), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            List<ACL> acl = zk.getACL(path, new Stat());
            if (acl.size() != 1 || !acl.get(0).getId().getScheme().equals("x509") || !acl.get(0).getId().getId().equals(subject)) {
                fail("ACL of " + path + " is " + acl + ", want x509:" + subject);
            }
            String data = new String(zk.getData(path, false, null), StandardCharsets.UTF_8);
            if (!data.equals("tls")) {
                fail("read back " + data);
            }
        } finally {
            zk.close();
        }

        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .zkClientConfig(cfg)
            .retryPolicy(new RetryNTimes(3, 200))
            .sessionTimeoutMs(10000)
            .connectionTimeoutMs(10000)
            .build();
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                fail("Curator: no TLS connection within 20s");
            }
            InterProcessMutex mutex = new InterProcessMutex(client, path + "-lock");
            if (!mutex.acquire(10, TimeUnit.SECONDS)) {
                fail("Curator: mutex not acquired");
            }
            mutex.release();
        } finally {
            client.close();
        }
        System.out.println("PASS TLS as " + subject);
        System.out.flush();
        System.exit(0);
    }
}
