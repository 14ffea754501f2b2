// Apache Curator's InterProcessMutex (curator-recipes, Java), driven through the lockbench
// adapter protocol (docs/CLIENTS.md), as Curator's recipe page shows it:
// `new InterProcessMutex(client, path)`, `acquire(time, unit)`, `release()`.
//
// The lock lives as long as the client's ZooKeeper session: its TTL is the session timeout,
// asked for at connect (`sessionTimeoutMs`) and kept alive by ZooKeeper's own client thread.
// Curator tells its user of a lost session through a ConnectionStateListener (LOST), which
// goes out as a `lost` event; SUSPENDED (connection lost, session maybe alive) as `suspended`.
// The lock gives no fencing token. InterProcessMutex belongs to the thread that acquired it:
// every request is answered on the main thread, as one job thread would hold it.
//
// Built by scripts/clients.sh with the JDK against Debian's libcurator-recipes-java.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorLock {
  static final int PROTOCOL = 1;
  static final ObjectMapper JSON = new ObjectMapper();
  static final PrintStream OUT =
      new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

  /** Writes one message, stamped, as one line (from any thread). System.nanoTime reads
   * CLOCK_MONOTONIC on Linux: the clock the protected resource logs with. */
  static synchronized void send(ObjectNode message) {
    message.put("t", System.nanoTime());
    OUT.print(message.toString() + "\n");
    OUT.flush();
  }

  static String said(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  static String version() throws Exception {
    try (InputStream in = ClassLoader.getSystemResourceAsStream(
        "META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    }
  }

  final CuratorFramework client;
  final String namespace;
  final int askedMs;
  final Map<String, InterProcessMutex> locks = new HashMap<>();
  final Set<String> lost = java.util.concurrent.ConcurrentHashMap.newKeySet();

  CuratorLock(JsonNode hello) throws Exception {
    StringBuilder hosts = new StringBuilder();
    for (JsonNode u : hello.get("urls")) {
      if (hosts.length() > 0) hosts.append(',');
      hosts.append(u.asText().replaceFirst("^zk://", ""));
    }
    askedMs = hello.get("session_timeout_ms").asInt();
    int connectMs = hello.get("connect_timeout_ms").asInt();
    namespace = hello.get("namespace").asText();
    client = CuratorFrameworkFactory.builder()
        .connectString(hosts.toString())
        .sessionTimeoutMs(askedMs)
        .connectionTimeoutMs(connectMs)
        .retryPolicy(new ExponentialBackoffRetry(1000, 3))
        .build();
    client.getConnectionStateListenable().addListener((c, state) -> {
      // Called on Curator's own thread: pushed as an event for every lock held.
      Set<String> keys;
      synchronized (locks) {
        keys = new HashSet<>(locks.keySet());
      }
      if (state == ConnectionState.LOST) {
        lost.addAll(keys);
        for (String key : keys) event("lost", key, "ConnectionState.LOST");
      } else if (state == ConnectionState.SUSPENDED) {
        for (String key : keys) event("suspended", key, "ConnectionState.SUSPENDED");
      }
    });
    client.start();
    if (!client.blockUntilConnected(connectMs, TimeUnit.MILLISECONDS)) {
      client.close();
      throw new IllegalStateException("no ZooKeeper session within " + connectMs + " ms at " + hosts);
    }
  }

  static void event(String event, String key, String why) {
    ObjectNode m = JSON.createObjectNode();
    m.put("event", event).put("key", key).put("why", why);
    send(m);
  }

  ObjectNode describe() throws Exception {
    ObjectNode d = JSON.createObjectNode();
    d.put("library", "curator").put("version", version()).put("backend", "zookeeper")
        .put("renewal", "automatic").put("fencing", false).put("notifies_loss", true);
    return d;
  }

  ObjectNode acquire(String key, long ttlMs, long waitMs) throws Exception {
    // The layout of lockbench's own ZooKeeper locks, so that its cleanup of the namespace
    // removes the nodes Curator leaves behind.
    InterProcessMutex lock = new InterProcessMutex(client, "/" + namespace + "/locks/" + key);
    ObjectNode r = JSON.createObjectNode();
    if (!lock.acquire(waitMs, TimeUnit.MILLISECONDS)) {
      return r.put("held", false);
    }
    synchronized (locks) {
      locks.put(key, lock);
    }
    lost.remove(key);
    // The lock lives as long as the session: the timeout the server granted (it clamps what
    // was asked to 2-20 ticks).
    int granted = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
    r.put("held", true).putNull("token").putNull("fencing_token")
        .put("validity_ms", granted > 0 ? granted : askedMs);
    return r;
  }

  ObjectNode held(String key) {
    InterProcessMutex lock;
    synchronized (locks) {
      lock = locks.get(key);
    }
    boolean held = lock != null && !lost.contains(key) && lock.isOwnedByCurrentThread()
        && client.getZookeeperClient().isConnected();
    return JSON.createObjectNode().put("held", held);
  }

  ObjectNode release(String key) throws Exception {
    InterProcessMutex lock;
    synchronized (locks) {
      lock = locks.get(key);
    }
    if (lock == null) throw new IllegalStateException("release of " + key + ", which this adapter does not hold");
    ObjectNode r = JSON.createObjectNode();
    try {
      lock.release();
      r.put("released", true);
    } catch (IllegalMonitorStateException e) {
      // Curator's "you do not own the lock": an answer, not a failure.
      r.put("released", false).put("said", said(e));
    }
    // Forgotten once Curator answered; a connection failure above (an exception other than
    // IllegalMonitorStateException) keeps it, so that the release can be tried again.
    synchronized (locks) {
      locks.remove(key);
    }
    return r;
  }

  void close() {
    client.close();
  }

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    CuratorLock lib = null;
    String line;
    while ((line = in.readLine()) != null) {
      line = line.trim();
      if (line.isEmpty()) continue;
      JsonNode request;
      try {
        request = JSON.readTree(line);
      } catch (Exception e) {
        ObjectNode m = JSON.createObjectNode();
        send(m.put("ok", false).put("error", "not JSON: " + e.getMessage()));
        continue;
      }
      String op = request.path("op").asText();
      JsonNode id = request.get("id");
      ObjectNode reply;
      try {
        if (op.equals("hello")) {
          if (request.path("protocol").asInt() != PROTOCOL) {
            throw new IllegalArgumentException(
                "protocol " + request.get("protocol") + "; this adapter speaks " + PROTOCOL);
          }
          CuratorLock opened = new CuratorLock(request);
          reply = opened.describe().put("protocol", PROTOCOL);
          lib = opened;
        } else if (lib == null) {
          throw new IllegalStateException(op + " before hello");
        } else if (op.equals("acquire")) {
          reply = lib.acquire(request.get("key").asText(), request.get("ttl_ms").asLong(),
              request.get("wait_ms").asLong());
        } else if (op.equals("renew") || op.equals("held")) {
          // The session is kept alive by ZooKeeper's client; asked, Curator answers with its
          // own view of the lock.
          reply = lib.held(request.get("key").asText());
        } else if (op.equals("release")) {
          reply = lib.release(request.get("key").asText());
        } else if (op.equals("bye")) {
          send(JSON.createObjectNode().put("ok", true).set("id", id));
          break;
        } else {
          throw new IllegalArgumentException("unknown op " + op);
        }
        reply.set("id", id);
        reply.put("ok", true);
        send(reply);
      } catch (Exception e) {
        e.printStackTrace(System.err);
        ObjectNode m = JSON.createObjectNode();
        m.set("id", id);
        send(m.put("ok", false).put("error", said(e)));
      }
    }
    if (lib != null) lib.close();
    System.exit(0);
  }
}
