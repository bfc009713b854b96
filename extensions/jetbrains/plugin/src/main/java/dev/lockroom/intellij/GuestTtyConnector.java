// GuestTtyConnector: JediTerm's TtyConnector over a guest process on a pty (the core's
// GuestProcess): the terminal reads the guest's output as characters, its keys go to
// process/write, its size to process/resize, and closing it hangs the process up (SIGHUP).
package dev.lockroom.intellij;

import com.jediterm.core.util.TermSize;
import com.jediterm.terminal.TtyConnector;
import dev.lockroom.core.GuestProcess;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

final class GuestTtyConnector implements TtyConnector {
  private final GuestProcess process;
  private final String name;
  private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
      .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE);
  private final StringBuilder pending = new StringBuilder();
  private ByteBuffer partial = ByteBuffer.allocate(0);
  private boolean exited;

  GuestTtyConnector(GuestProcess process, String name) {
    this.process = process;
    this.name = name;
    process.onOutput(o -> received(o.data()));
    process.exited().thenRun(() -> {
      synchronized (this) {
        exited = true;
        notifyAll();
      }
    });
  }

  /** Bytes → characters, keeping a character split across two chunks whole. */
  private synchronized void received(byte[] data) {
    ByteBuffer in = ByteBuffer.allocate(partial.remaining() + data.length).put(partial).put(data).flip();
    CharBuffer out = CharBuffer.allocate(in.remaining() + 1);
    decoder.decode(in, out, false);
    partial = in.slice();
    pending.append(out.flip());
    notifyAll();
  }

  @Override
  public synchronized int read(char[] buf, int offset, int length) throws IOException {
    try {
      while (pending.length() == 0 && !exited) wait();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
    if (pending.length() == 0) return -1;
    int n = Math.min(length, pending.length());
    pending.getChars(0, n, buf, offset);
    pending.delete(0, n);
    return n;
  }

  @Override
  public void write(byte[] bytes) {
    process.write(bytes);
  }

  @Override
  public void write(String string) {
    write(string.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public synchronized boolean isConnected() {
    return !exited;
  }

  @Override
  public int waitFor() throws InterruptedException {
    Long code = process.exited().join().exitCode();
    return code == null ? 1 : code.intValue();
  }

  @Override
  public synchronized boolean ready() {
    return pending.length() > 0;
  }

  @Override
  public String getName() {
    return name;
  }

  @Override
  public void close() {
    if (isConnected()) process.signal("SIGHUP");
  }

  public void resize(TermSize size) {
    process.resize(Math.max(1, size.getColumns()), Math.max(1, size.getRows()));
  }
}
