// Framing: LSP's base protocol (Content-Length headers, then the JSON body) over byte streams,
// as lockroom's editor face speaks it (protocol/README.md, "Framing"). The reader runs on the
// connection's reader thread; the writer is called from any thread and serialises its frames.
package dev.lockroom.core.rpc;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

public final class Framing {
  private Framing() {}

  /** Headers larger than this are a broken stream, not a message. */
  static final int kMaxHeaderBytes = 8192;

  /** Reads one message body; null at a clean end of stream (between messages). */
  public static String read(InputStream in, int maxMessageBytes) throws IOException {
    long length = -1;
    int headerBytes = 0;
    while (true) {
      String line = readLine(in, headerBytes == 0);
      if (line == null) return null;
      headerBytes += line.length() + 2;
      if (headerBytes > kMaxHeaderBytes) throw new IOException("a frame header over " + kMaxHeaderBytes + " bytes");
      if (line.isEmpty()) break;
      int colon = line.indexOf(':');
      if (colon < 0) throw new IOException("a frame header line without ':': " + line);
      String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      if (name.equals("content-length")) {
        try {
          length = Long.parseLong(line.substring(colon + 1).trim());
        } catch (NumberFormatException e) {
          throw new IOException("a Content-Length that is not a number: " + line);
        }
      }
    }
    if (length < 0) throw new IOException("a frame without Content-Length");
    if (length > maxMessageBytes) throw new IOException("a message of " + length + " bytes, over the client's limit of " + maxMessageBytes);
    byte[] body = in.readNBytes((int) length);
    if (body.length != length) throw new EOFException("the stream ended inside a message");
    return new String(body, StandardCharsets.UTF_8);
  }

  /** One header line without its CRLF (a bare LF is tolerated); null at end of stream before any byte. */
  private static String readLine(InputStream in, boolean endAllowed) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream(64);
    while (true) {
      int b = in.read();
      if (b < 0) {
        if (endAllowed && line.size() == 0) return null;
        throw new EOFException("the stream ended inside a frame header");
      }
      if (b == '\n') break;
      line.write(b);
      if (line.size() > kMaxHeaderBytes) throw new IOException("a frame header over " + kMaxHeaderBytes + " bytes");
    }
    String s = line.toString(StandardCharsets.US_ASCII);
    return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
  }

  /** Writes one message as a frame and flushes it. */
  public static void write(OutputStream out, String json) throws IOException {
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    byte[] header = ("Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    synchronized (out) {
      out.write(header);
      out.write(body);
      out.flush();
    }
  }
}
