package dev.kvcache.server.events;

import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** The tests' JeroMQ clients of the KV events' sockets. */
public final class ZmqClients {

  private ZmqClients() {}

  /**
   * A client socket of {@code type} in {@code client}. JeroMQ's connecting side now and then
   * leaves a ZMTP handshake unfinished (the peer's greeting unread; libzmq's clients do not, nor
   * do they against this publisher): a short handshake interval ends such a connection soon, and
   * the socket connects again.
   */
  public static ZMQ.Socket socket(ZContext client, SocketType type, int timeoutMillis) {
    ZMQ.Socket socket = client.createSocket(type);
    socket.setHandshakeIvl(300);
    socket.setReceiveTimeOut(timeoutMillis);
    return socket;
  }
}
