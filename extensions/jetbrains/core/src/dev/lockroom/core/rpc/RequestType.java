// RequestType: a JSON-RPC request method with the Java types of its params and result. The
// constants live in the generated dev.lockroom.protocol.Methods; the connection uses the classes
// to read results and server requests' params with Gson.
package dev.lockroom.core.rpc;

public record RequestType<P, R>(String method, Class<P> paramsType, Class<R> resultType) {}
