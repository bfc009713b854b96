// NotificationType: a JSON-RPC notification method with the Java type of its params (constants
// in the generated dev.lockroom.protocol.Methods).
package dev.lockroom.core.rpc;

public record NotificationType<P>(String method, Class<P> paramsType) {}
