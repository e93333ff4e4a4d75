// DiscoveryPeer holds RecipePeer's service-discovery commands:
// curator-x-discovery's ServiceDiscovery and ServiceProvider, with String
// payloads, so Go tests can check that services registered from Go are
// found from Java and the reverse. It is compiled only when
// curator-x-discovery and Jackson are installed; RecipePeer finds it by
// name and hands it every command it does not know; handle answers null for
// commands that are not its own.
//
// Commands (BASE is the discovery's base path; PAYLOAD has no spaces):
//   disc-start BASE                      -> OK   (ServiceDiscovery, started)
//   disc-register NAME ID ADDRESS PORT PAYLOAD -> OK (a DYNAMIC instance)
//   disc-unregister NAME ID              -> OK
//   disc-query NAME                      -> ID@ADDRESS:PORT:PAYLOAD,... sorted
//                                           by id, or NONE
//   disc-provider NAME                   -> OK   (a ServiceProvider, round
//                                           robin, started)
//   disc-await NAME IDS MS               -> SEEN | TIMEOUT have=IDS: the
//                                           provider's instances are exactly
//                                           IDS (comma-separated, sorted;
//                                           "-" for none)
//   disc-close                           -> OK   (providers, then discovery)

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.curator.x.discovery.strategies.RoundRobinStrategy;

public class DiscoveryPeer {
    static ServiceDiscovery<String> discovery;
    static final Map<String, ServiceProvider<String>> providers = new HashMap<>();
    static final Map<String, ServiceInstance<String>> registered = new HashMap<>();

    static String ids(Collection<ServiceInstance<String>> in) {
        List<String> ids = new ArrayList<>();
        for (ServiceInstance<String> i : in) {
            ids.add(i.getId());
        }
        ids.sort(null);
        return ids.isEmpty() ? "-" : String.join(",", ids);
    }

    public static String handle(CuratorFramework client, String[] a) throws Exception {
        switch (a[0]) {
            case "disc-start": {
                discovery = ServiceDiscoveryBuilder.builder(String.class)
                    .client(client)
                    .basePath(a[1])
                    .serializer(new JsonInstanceSerializer<>(String.class))
                    .build();
                discovery.start();
                return "OK";
            }
            case "disc-register": {
                ServiceInstance<String> in = ServiceInstance.<String>builder()
                    .name(a[1]).id(a[2]).address(a[3]).port(Integer.parseInt(a[4])).payload(a[5])
                    .build();
                discovery.registerService(in);
                registered.put(a[1] + "/" + a[2], in);
                return "OK";
            }
            case "disc-unregister": {
                ServiceInstance<String> in = registered.remove(a[1] + "/" + a[2]);
                if (in == null) {
                    return "ERR not registered here";
                }
                discovery.unregisterService(in);
                return "OK";
            }
            case "disc-query": {
                List<ServiceInstance<String>> in = new ArrayList<>(discovery.queryForInstances(a[1]));
                if (in.isEmpty()) {
                    return "NONE";
                }
                in.sort((x, y) -> x.getId().compareTo(y.getId()));
                List<String> out = new ArrayList<>();
                for (ServiceInstance<String> i : in) {
                    out.add(i.getId() + "@" + i.getAddress() + ":" + i.getPort() + ":" + i.getPayload());
                }
                return String.join(",", out);
            }
            case "disc-provider": {
                ServiceProvider<String> p = discovery.serviceProviderBuilder()
                    .serviceName(a[1])
                    .providerStrategy(new RoundRobinStrategy<>())
                    .build();
                p.start();
                providers.put(a[1], p);
                return "OK";
            }
            case "disc-await": {
                ServiceProvider<String> p = providers.get(a[1]);
                if (p == null) {
                    return "ERR no provider for " + a[1];
                }
                long deadline = System.currentTimeMillis() + Long.parseLong(a[3]);
                String have = ids(p.getAllInstances());
                while (!have.equals(a[2])) {
                    if (System.currentTimeMillis() > deadline) {
                        return "TIMEOUT have=" + have;
                    }
                    Thread.sleep(20);
                    have = ids(p.getAllInstances());
                }
                return "SEEN";
            }
            case "disc-close": {
                for (ServiceProvider<String> p : providers.values()) {
                    p.close();
                }
                providers.clear();
                registered.clear();
                if (discovery != null) {
                    discovery.close();
                    discovery = null;
                }
                return "OK";
            }
            default:
                return null;
        }
    }
}
