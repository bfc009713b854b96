// RequestOptions: what a caller may add to a request: a listener for its `$/progress` (the
// client adds a workDoneToken to the params) and a CancelToken.
package dev.lockroom.core;

import dev.lockroom.core.rpc.CancelToken;
import dev.lockroom.protocol.ProgressParams;
import java.util.function.Consumer;

/**
 * @param onProgress called on the event thread with each begin/report/end, or null
 * @param cancel cancels the request (`$/cancelRequest`), or null
 */
public record RequestOptions(Consumer<ProgressParams.Value> onProgress, CancelToken cancel) {
  public static final RequestOptions kNone = new RequestOptions(null, null);

  public static RequestOptions progress(Consumer<ProgressParams.Value> onProgress) {
    return new RequestOptions(onProgress, null);
  }

  public static RequestOptions cancel(CancelToken cancel) {
    return new RequestOptions(null, cancel);
  }

  public RequestOptions withCancel(CancelToken token) {
    return new RequestOptions(onProgress, token);
  }
}
