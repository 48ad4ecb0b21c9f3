package io.aclstore.kafka;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedDeque;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * HTTP/1.1 to one sidecar on blocking sockets, kept alive in a small pool.
 *
 * <p>Why not {@code java.net.http.HttpClient}: its synchronous {@code send} hands each exchange
 * between the caller, its selector thread and its executor, and on a busy broker host every
 * hand-off waits for a CPU: measured on loopback, 0.77 ms p50 / 5.9 ms p99 per call against
 * 0.31 ms / 3.0 ms for a blocking socket answered on the caller's own thread. A decision is on
 * the request path of every Kafka request, so the plugin does the exchange itself: one request
 * written at once, a status line, headers and a {@code Content-Length} body read back (the
 * sidecar always sends one). A pooled connection the sidecar has closed is retried once on a
 * fresh one, before any byte of an answer was read.
 */
final class BlockingHttp implements AutoCloseable {
    static final int MAX_IDLE = 32;

    record Answer(int status, byte[] body) {
    }

    private static final class Connection {
        final Socket socket;
        final OutputStream out;
        final InputStream in;

        Connection(Socket socket) throws IOException {
            this.socket = socket;
            this.out = new BufferedOutputStream(socket.getOutputStream(), 8192);
            this.in = new BufferedInputStream(socket.getInputStream(), 8192);
        }

        void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a connection we are discarding anyway
            }
        }
    }

    private final URI base;
    private final String hostHeader;
    private final int connectTimeoutMs;
    private final SSLSocketFactory tls;
    private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    /** {@code tls}: the sockets of an https:// base (null: the JVM's default trust store). */
    BlockingHttp(URI base, Duration connectTimeout, SSLSocketFactory tls) {
        this.base = base;
        this.tls = tls != null ? tls : (SSLSocketFactory) SSLSocketFactory.getDefault();
        this.hostHeader = base.getHost() + ":" + port(base);
        this.connectTimeoutMs = (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis());
    }

    private static int port(URI uri) {
        if (uri.getPort() > 0) {
            return uri.getPort();
        }
        return "https".equals(uri.getScheme()) ? 443 : 80;
    }

    /** One exchange; {@code body} null makes a GET. The whole exchange is bound by {@code timeout}. */
    Answer exchange(String method, String path, byte[] body, String authorization,
                    Duration timeout) throws IOException {
        byte[] request = encode(method, path, body, authorization);
        int timeoutMs = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        Connection pooled = idle.pollFirst();
        if (pooled != null) {
            try {
                return exchangeOn(pooled, request, timeoutMs);
            } catch (StaleConnectionException e) {
                pooled.close();  // the sidecar closed it while idle: once more on a fresh one
            }
        }
        Connection fresh = open(timeoutMs);
        try {
            return exchangeOn(fresh, request, timeoutMs);
        } catch (StaleConnectionException e) {
            throw new IOException("the sidecar closed the connection without answering", e);
        }
    }

    private static final class StaleConnectionException extends IOException {
        private static final long serialVersionUID = 1L;

        StaleConnectionException(Throwable cause) {
            super(cause);
        }
    }

    private Connection open(int timeoutMs) throws IOException {
        boolean secure = "https".equals(base.getScheme());
        Socket socket = secure ? tls.createSocket() : new Socket();
        try {
            socket.setTcpNoDelay(true);
            String host = base.getHost();
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);  // an IPv6 literal
            }
            socket.connect(new InetSocketAddress(host, port(base)),
                    Math.min(connectTimeoutMs, timeoutMs));
            if (secure) {
                // A bare SSLSocket checks the chain but not the name: ask for what HTTPS checks.
                SSLSocket ssl = (SSLSocket) socket;
                SSLParameters parameters = ssl.getSSLParameters();
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
                ssl.setSSLParameters(parameters);
                ssl.setSoTimeout(timeoutMs);
                ssl.startHandshake();
            }
            return new Connection(socket);
        } catch (IOException e) {
            socket.close();
            throw e;
        }
    }

    private Answer exchangeOn(Connection c, byte[] request, int timeoutMs) throws IOException {
        boolean keep = false;
        try {
            c.socket.setSoTimeout(timeoutMs);
            int first;
            try {
                c.out.write(request);
                c.out.flush();
                first = c.in.read();
            } catch (SocketTimeoutException e) {
                throw e;
            } catch (IOException e) {
                throw new StaleConnectionException(e);
            }
            if (first < 0) {
                throw new StaleConnectionException(new EOFException("closed before answering"));
            }
            String statusLine = (char) first + readLine(c.in);
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP/1.1 answer: " + statusLine);
            }
            int status = Integer.parseInt(parts[1]);
            int length = -1;
            boolean close = false;
            for (String line = readLine(c.in); !line.isEmpty(); line = readLine(c.in)) {
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    continue;
                }
                String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = line.substring(colon + 1).trim();
                if (name.equals("content-length")) {
                    length = Integer.parseInt(value);
                } else if (name.equals("connection")) {
                    close = value.equalsIgnoreCase("close");
                } else if (name.equals("transfer-encoding")) {
                    throw new IOException("the sidecar answered with Transfer-Encoding " + value
                            + "; the plugin reads Content-Length bodies only");
                }
            }
            if (length < 0) {
                throw new IOException("the sidecar's answer has no Content-Length");
            }
            byte[] body = c.in.readNBytes(length);
            if (body.length != length) {
                throw new EOFException("the sidecar's answer ended after " + body.length + " of "
                        + length + " bytes");
            }
            keep = !close;
            return new Answer(status, body);
        } finally {
            if (keep && !closed && idle.size() < MAX_IDLE) {
                idle.offerFirst(c);
            } else {
                c.close();
            }
        }
    }

    private byte[] encode(String method, String path, byte[] body, String authorization) {
        StringBuilder head = new StringBuilder(256)
                .append(method).append(' ').append(base.getRawPath()).append(path)
                .append(" HTTP/1.1\r\nHost: ").append(hostHeader)
                .append("\r\nAccept: application/json\r\n");
        if (authorization != null) {
            head.append("Authorization: ").append(authorization).append("\r\n");
        }
        if (body != null) {
            head.append("Content-Type: application/json\r\nContent-Length: ")
                    .append(body.length).append("\r\n");
        }
        head.append("\r\n");
        byte[] headBytes = head.toString().getBytes(StandardCharsets.UTF_8);
        if (body == null) {
            return headBytes;
        }
        byte[] out = new byte[headBytes.length + body.length];
        System.arraycopy(headBytes, 0, out, 0, headBytes.length);
        System.arraycopy(body, 0, out, headBytes.length, body.length);
        return out;
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder(64);
        while (true) {
            int ch = in.read();
            if (ch < 0) {
                throw new EOFException("the sidecar's answer ended inside its headers");
            }
            if (ch == '\n') {
                int end = line.length();
                if (end > 0 && line.charAt(end - 1) == '\r') {
                    line.setLength(end - 1);
                }
                return line.toString();
            }
            if (line.length() > 16_384) {
                throw new IOException("a header line of the sidecar's answer is over 16 KiB");
            }
            line.append((char) ch);
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Connection c = idle.pollFirst(); c != null; c = idle.pollFirst()) {
            c.close();
        }
    }
}
