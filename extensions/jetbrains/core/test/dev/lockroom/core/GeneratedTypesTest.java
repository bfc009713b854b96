// The generated types against the schema's own examples (protocol/schema/examples.json): every
// example's params and result read into the Java type methods.json names and write back as the
// same JSON, so no field is lost or renamed, no enum value unknown; and the method tables hold
// every method. No lockroom process needed.
package dev.lockroom.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.lockroom.core.rpc.NotificationType;
import dev.lockroom.core.rpc.RequestType;
import dev.lockroom.protocol.Methods;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GeneratedTypesTest {
  private static Map<String, Object> methodTable() throws IllegalAccessException {
    Map<String, Object> out = new HashMap<>();
    for (Field f : Methods.class.getFields()) {
      Object v = f.get(null);
      if (v instanceof RequestType<?, ?> r) out.put(r.method(), r);
      if (v instanceof NotificationType<?> n) out.put(n.method(), n);
    }
    return out;
  }

  @Test
  void everyExampleReadsAndWritesBackUnchanged() throws Exception {
    JsonObject methods = JsonParser.parseString(Files.readString(Support.repo().resolve("protocol/schema/methods.json")))
        .getAsJsonObject().getAsJsonObject("methods");
    Map<String, Object> table = methodTable();
    assertEquals(methods.keySet(), table.keySet(), "Methods has exactly the methods of methods.json");
    JsonObject examples = JsonParser.parseString(Files.readString(Support.repo().resolve("protocol/schema/examples.json"))).getAsJsonObject();
    int checked = 0;
    for (JsonElement e : examples.getAsJsonArray("examples")) {
      JsonObject ex = e.getAsJsonObject();
      String method = ex.get("method").getAsString();
      Object type = table.get(method);
      assertNotNull(type, "an example of " + method + ", which Methods does not have");
      Class<?> params = type instanceof RequestType<?, ?> r ? r.paramsType() : ((NotificationType<?>) type).paramsType();
      if (ex.has("params")) checkRoundTrip(method + " params", ex.get("params"), params);
      if (ex.has("result") && type instanceof RequestType<?, ?> r) checkRoundTrip(method + " result", ex.get("result"), r.resultType());
      checked++;
    }
    assertTrue(checked >= methods.size(), "at least one example per method, checked " + checked);
  }

  private static void checkRoundTrip(String what, JsonElement json, Class<?> type) {
    Object value = Json.read(json, type);
    JsonElement back = value == null ? JsonNull.INSTANCE : Json.tree(value);
    // `{}` params of a method whose params are Empty come back as {}; null stays null.
    assertEquals(normalize(json), normalize(back), what + " through " + type.getSimpleName());
  }

  /**
   * Java reads an absent field and a null one alike (a side with no file: `oldMode` null), and
   * writes neither: members holding null are left out on both sides before comparing.
   */
  private static JsonElement normalize(JsonElement e) {
    if (e.isJsonObject()) {
      JsonObject out = new JsonObject();
      for (Map.Entry<String, JsonElement> m : e.getAsJsonObject().entrySet()) {
        if (!m.getValue().isJsonNull()) out.add(m.getKey(), normalize(m.getValue()));
      }
      return out;
    }
    if (e.isJsonArray()) {
      com.google.gson.JsonArray out = new com.google.gson.JsonArray();
      for (JsonElement x : e.getAsJsonArray()) out.add(normalize(x));
      return out;
    }
    return JsonParser.parseString(e.toString());
  }

  @Test
  void enumsCarryTheirWireNames() {
    assertEquals("\"notFound\"", Json.write(dev.lockroom.protocol.ResponseError.Data.Kind.NOT_FOUND));
    assertEquals(dev.lockroom.protocol.HunkLine.Origin.ADDED, Json.read(JsonParser.parseString("\"+\""), dev.lockroom.protocol.HunkLine.Origin.class));
    assertEquals("{}", Json.write(new dev.lockroom.protocol.Empty()));
  }
}
