// Json: the one Gson of the core (records, enums by their wire names, nulls left out), and
// small helpers for the protocol's unions that the generated types carry as JsonElement
// (a workspace that is a path or an object, a network that is false or a policy).
package dev.lockroom.core;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonPrimitive;

public final class Json {
  private Json() {}

  public static final Gson kGson = new GsonBuilder().disableHtmlEscaping().create();

  public static JsonElement tree(Object value) {
    if (value instanceof JsonElement e) return e;
    return kGson.toJsonTree(value);
  }

  public static <T> T read(JsonElement json, Class<T> type) {
    return kGson.fromJson(json, type);
  }

  public static String write(Object value) {
    return kGson.toJson(value);
  }

  /**
   * A copy of a generated record with some fields changed, through its JSON form: no positional
   * constructor, so a field the schema adds later does not break the caller.
   */
  @SuppressWarnings("unchecked")
  public static <T> T copy(T value, java.util.function.Consumer<com.google.gson.JsonObject> edit) {
    com.google.gson.JsonObject json = kGson.toJsonTree(value).getAsJsonObject();
    edit.accept(json);
    return (T) kGson.fromJson(json, value.getClass());
  }

  /** A host folder as sandbox/create's `workspace` (the path form). */
  public static JsonElement path(String absolutePath) {
    return new JsonPrimitive(absolutePath);
  }

  /** `network: false`: no network at all. */
  public static JsonElement off() {
    return new JsonPrimitive(false);
  }
}
