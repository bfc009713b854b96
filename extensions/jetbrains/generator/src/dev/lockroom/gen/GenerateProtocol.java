// GenerateProtocol: the Java types of lockroom's editor protocol, generated from
// protocol/schema/lockroom.schema.json and methods.json (the same files the VS Code client's
// scripts/gen-protocol.mjs reads). extensions/jetbrains/run runs it before compiling the core;
// its output lives in build/generated and is never committed.
//
// One Java file per `$defs` entry that declares something: an object becomes a record (with a
// builder, for params), an enum of strings a Java enum, a union of objects one record holding
// every branch's fields. Aliases (ids, modes, Env) resolve to their Java type where used; unions
// of unlike branches (a path or an object, false or a policy) are JsonElement. MethodTables
// writes Methods.java (every method of methods.json with its params and result types) and
// LockroomRequests.java (one typed method per client request). A schema keyword outside the subset this generator knows stops it,
// naming the keyword and where it is, so nothing is dropped silently.
//   java dev.lockroom.gen.GenerateProtocol SCHEMA_DIR OUT_DIR
package dev.lockroom.gen;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import static dev.lockroom.gen.JavaNames.*;

public final class GenerateProtocol {
  static final String kPackage = "dev.lockroom.protocol";
  static final Set<String> kTypeKeywords = Set.of("type", "properties", "required", "additionalProperties", "items",
      "enum", "const", "$ref", "oneOf", "anyOf");
  static final Set<String> kDocKeywords = Set.of("description", "title", "$comment", "default", "deprecated", "examples");
  static final Set<String> kBoundKeywords = Set.of("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
      "pattern");

  final JsonObject defs;
  final Map<String, String> aliasCache = new TreeMap<>();

  GenerateProtocol(JsonObject defs) {
    this.defs = defs;
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 2) {
      System.err.println("usage: GenerateProtocol SCHEMA_DIR OUT_DIR");
      System.exit(2);
    }
    Path schemaDir = Path.of(args[0]);
    Path out = Path.of(args[1]).resolve(kPackage.replace('.', '/'));
    JsonObject schema = read(schemaDir.resolve("lockroom.schema.json"));
    JsonObject methods = read(schemaDir.resolve("methods.json")).getAsJsonObject("methods");
    GenerateProtocol gen = new GenerateProtocol(schema.getAsJsonObject("$defs"));
    Files.createDirectories(out);
    try {
      int files = 0;
      for (String name : gen.defs.keySet()) {
        String text = gen.declaration(name);
        if (text == null) continue;
        write(out.resolve(name + ".java"), text);
        files++;
      }
      MethodTables tables = new MethodTables(gen);
      write(out.resolve("Methods.java"), tables.methods(methods));
      write(out.resolve("LockroomRequests.java"), tables.requests(methods));
      System.err.printf("generated %d protocol types and the method tables into %s%n", files, out);
    } catch (SchemaError e) {
      System.err.println("GenerateProtocol: " + e.getMessage());
      System.exit(1);
    }
  }

  static JsonObject read(Path p) throws IOException {
    return JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
  }

  static void write(Path p, String text) throws IOException {
    // Unchanged files keep their time stamp, so javac's inputs change only when the schema does.
    if (Files.exists(p) && Files.readString(p, StandardCharsets.UTF_8).equals(text)) return;
    Files.writeString(p, text, StandardCharsets.UTF_8);
  }

  static final class SchemaError extends RuntimeException {
    SchemaError(String message) {
      super(message);
    }
  }

  // ---- what a schema is ---------------------------------------------------------------------

  static boolean isDocOnly(JsonElement s) {
    if (s.isJsonPrimitive() && s.getAsJsonPrimitive().isBoolean() && s.getAsBoolean()) return true;
    if (!s.isJsonObject()) return false;
    for (String k : s.getAsJsonObject().keySet()) if (!kDocKeywords.contains(k)) return false;
    return true;
  }

  static void checkKeywords(JsonObject s, String where) {
    for (String k : s.keySet()) {
      if (!kTypeKeywords.contains(k) && !kDocKeywords.contains(k) && !kBoundKeywords.contains(k))
        throw new SchemaError(where + ": keyword \"" + k + "\" is not one this generator knows");
    }
  }

  static List<String> types(JsonObject s) {
    List<String> out = new ArrayList<>();
    JsonElement t = s.get("type");
    if (t == null) return out;
    if (t.isJsonArray()) for (JsonElement e : t.getAsJsonArray()) out.add(e.getAsString());
    else out.add(t.getAsString());
    return out;
  }

  String refName(JsonObject s, String where) {
    String ref = s.get("$ref").getAsString();
    String prefix = "#/$defs/";
    if (!ref.startsWith(prefix) || !defs.has(ref.substring(prefix.length())))
      throw new SchemaError(where + ": $ref " + ref + " does not name a $defs entry");
    return ref.substring(prefix.length());
  }

  /** Whether the def declares a Java type of its own (else it is an alias resolved where used). */
  boolean declares(String name) {
    JsonElement e = defs.get(name);
    if (!e.isJsonObject()) return false;
    JsonObject s = e.getAsJsonObject();
    if (s.has("$ref") || s.has("const")) return false;
    if (s.has("enum")) return allStrings(s.getAsJsonArray("enum"));
    if (s.has("oneOf") || s.has("anyOf")) return objectUnion(s, name) != null;
    List<String> t = types(s);
    t.remove("null");
    return t.size() == 1 && t.get(0).equals("object") && !isMap(s);
  }

  static boolean allStrings(JsonArray a) {
    for (JsonElement e : a) if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isString()) return false;
    return true;
  }

  static boolean allIntegers(JsonArray a) {
    for (JsonElement e : a) {
      if (!e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) return false;
      double d = e.getAsDouble();
      if (d != Math.rint(d)) return false;
    }
    return true;
  }

  static boolean isMap(JsonObject s) {
    return !s.has("properties") && s.has("additionalProperties") && s.get("additionalProperties").isJsonObject();
  }

  /** The object branches of a union of objects (null branches left out), or null when it is not one. */
  List<JsonObject> objectUnion(JsonObject s, String where) {
    JsonArray branches = s.has("oneOf") ? s.getAsJsonArray("oneOf") : s.getAsJsonArray("anyOf");
    List<JsonObject> out = new ArrayList<>();
    for (JsonElement b : branches) {
      JsonObject o = b.getAsJsonObject();
      List<String> t = types(o);
      if (t.equals(List.of("null")) && o.size() == 1) continue;
      if (!t.equals(List.of("object")) || !o.has("properties")) return null;
      out.add(o);
    }
    return out.size() >= 2 ? out : null;
  }

  // ---- Java types ---------------------------------------------------------------------------

  /** Nested declarations of one top-level file, and the names taken in it. */
  final class Scope {
    final StringBuilder nested = new StringBuilder();
    final Set<String> taken = new HashSet<>();
    final Set<String> refs = new HashSet<>();
    final String indent;

    Scope(String indent) {
      this.indent = indent;
    }

    String unique(String wanted) {
      String name = wanted;
      // A nested type may share a top-level one's name unless this file also uses that one.
      if (defs.has(name) && refs.contains(name)) name = name + "Item";
      for (int i = 2; taken.contains(name); i++) name = wanted + i;
      taken.add(name);
      return name;
    }
  }

  /** The Java type for schema `s` at `where`; nested types are declared into `scope` named after `hint`. */
  String javaType(JsonElement se, String where, String hint, Scope scope, boolean required) {
    if (isDocOnly(se)) return "JsonElement";
    if (!se.isJsonObject()) throw new SchemaError(where + ": a schema must be an object");
    JsonObject s = se.getAsJsonObject();
    checkKeywords(s, where);
    if (s.has("$ref")) {
      String ref = refName(s, where);
      return declares(ref) ? ref : aliasType(ref, required);
    }
    if (s.has("const")) {
      JsonElement c = s.get("const");
      if (c.isJsonPrimitive() && c.getAsJsonPrimitive().isString()) return "String";
      if (c.isJsonPrimitive() && c.getAsJsonPrimitive().isBoolean()) return "Boolean";
      return "JsonElement";
    }
    if (s.has("enum")) {
      JsonArray values = s.getAsJsonArray("enum");
      if (allStrings(values)) {
        String name = scope.unique(hint);
        scope.nested.append(enumDecl(name, s, scope.indent, true));
        return name;
      }
      if (allIntegers(values)) return required ? "long" : "Long";
      return "JsonElement";
    }
    if (s.has("oneOf") || s.has("anyOf")) {
      String key = s.has("oneOf") ? "oneOf" : "anyOf";
      JsonArray branches = s.getAsJsonArray(key);
      List<JsonElement> nonNull = new ArrayList<>();
      for (JsonElement b : branches) {
        if (!b.isJsonObject()) throw new SchemaError(where + "." + key + ": a branch must be an object");
        checkKeywords(b.getAsJsonObject(), where + "." + key);
        JsonObject o = b.getAsJsonObject();
        if (!(types(o).equals(List.of("null")) && o.size() == 1)) nonNull.add(b);
      }
      if (nonNull.size() == 1) return boxed(javaType(nonNull.get(0), where + "." + key + "[0]", hint, scope, false));
      List<JsonObject> objects = objectUnion(s, where);
      if (objects != null) {
        String name = scope.unique(hint);
        scope.nested.append(recordDecl(name, mergedObject(objects, where), where, scope.indent, true));
        return name;
      }
      // Unlike branches (a string or an object, false or a policy): the JSON value itself.
      for (int i = 0; i < branches.size(); i++) javaType(branches.get(i), where + "." + key + "[" + i + "]", hint, new Scope(""), false);
      return "JsonElement";
    }
    List<String> t = types(s);
    if (t.isEmpty()) throw new SchemaError(where + ": a schema with neither type, $ref, const, enum nor a combinator");
    boolean nullable = t.remove("null");
    if (t.size() != 1) return "JsonElement";
    boolean primitive = required && !nullable;
    switch (t.get(0)) {
      case "string":
        return "String";
      case "integer":
        return primitive ? "long" : "Long";
      case "number":
        return primitive ? "double" : "Double";
      case "boolean":
        return primitive ? "boolean" : "Boolean";
      case "array": {
        if (!s.has("items")) return "List<JsonElement>";
        String item = javaType(s.get("items"), where + ".items", singular(hint), scope, false);
        return "List<" + boxed(item) + ">";
      }
      case "object": {
        if (isMap(s)) {
          String value = javaType(s.get("additionalProperties"), where + ".additionalProperties", hint + "Value", scope, false);
          return "Map<String, " + boxed(value) + ">";
        }
        if (!s.has("properties") && !(s.has("additionalProperties") && !s.get("additionalProperties").getAsBoolean()))
          return "JsonObject";
        String name = scope.unique(hint);
        scope.nested.append(recordDecl(name, s, where, scope.indent, true));
        return name;
      }
      default:
        throw new SchemaError(where + ": type \"" + t.get(0) + "\" is not one this generator knows");
    }
  }

  String aliasType(String def, boolean required) {
    // Aliases never declare nested types (checked: a nested declaration would have nowhere to go).
    Scope scope = new Scope("");
    String t = javaType(defs.get(def), "$defs." + def, def, scope, required);
    if (scope.nested.length() > 0) throw new SchemaError("$defs." + def + ": an alias that declares a type");
    return t;
  }

  static String doc(JsonObject s) {
    List<String> parts = new ArrayList<>();
    if (s.has("description")) parts.add(s.get("description").getAsString());
    List<String> bounds = new ArrayList<>();
    for (String k : s.keySet()) if (kBoundKeywords.contains(k)) bounds.add(k + " " + s.get(k));
    if (s.has("const")) bounds.add("always " + s.get("const"));
    if (!bounds.isEmpty()) parts.add("(" + String.join(", ", bounds) + ")");
    return String.join(" ", parts).replace("*/", "*\\/").replace("@", "&#64;");
  }

  /** Every branch's properties in one object; a property whose Java types differ between branches becomes JsonElement. */
  JsonObject mergedObject(List<JsonObject> branches, String where) {
    JsonObject props = new JsonObject();
    Set<String> requiredEverywhere = null;
    for (JsonObject b : branches) {
      for (Map.Entry<String, JsonElement> p : b.getAsJsonObject("properties").entrySet()) {
        if (!props.has(p.getKey())) {
          props.add(p.getKey(), p.getValue());
        } else if (!props.get(p.getKey()).equals(p.getValue())) {
          JsonElement known = props.get(p.getKey());
          JsonArray consts = constsOf(known);
          if (consts != null && p.getValue().isJsonObject() && p.getValue().getAsJsonObject().has("const")) {
            // A discriminator (mode, kind): each branch's constant, as one enum.
            consts.add(p.getValue().getAsJsonObject().get("const"));
            JsonObject e = new JsonObject();
            e.add("enum", consts);
            e.addProperty("description", "which of the shapes this is");
            props.add(p.getKey(), e);
            continue;
          }
          String a = javaType(props.get(p.getKey()), where, "X", new Scope(""), false);
          String c = javaType(p.getValue(), where, "X", new Scope(""), false);
          if (!a.equals(c)) {
            JsonObject any = new JsonObject();
            any.addProperty("description", "differs between the union's branches");
            props.add(p.getKey(), any);
          }
        }
      }
      Set<String> req = new HashSet<>();
      if (b.has("required")) for (JsonElement r : b.getAsJsonArray("required")) req.add(r.getAsString());
      if (requiredEverywhere == null) requiredEverywhere = req;
      else requiredEverywhere.retainAll(req);
    }
    JsonObject merged = new JsonObject();
    merged.addProperty("type", "object");
    merged.add("properties", props);
    JsonArray req = new JsonArray();
    for (String r : requiredEverywhere) req.add(r);
    merged.add("required", req);
    merged.addProperty("description", "one of " + branches.size() + " shapes, their fields together (a field absent from the shape received is null)");
    return merged;
  }

  /** The constants a property may hold when it is a const or an enum made of consts so far, else null. */

  static JsonArray constsOf(JsonElement s) {
    if (!s.isJsonObject()) return null;
    JsonObject o = s.getAsJsonObject();
    if (o.has("const") && o.get("const").isJsonPrimitive() && o.get("const").getAsJsonPrimitive().isString()) {
      JsonArray a = new JsonArray();
      a.add(o.get("const"));
      return a;
    }
    if (o.has("enum") && "which of the shapes this is".equals(o.has("description") ? o.get("description").getAsString() : null))
      return o.getAsJsonArray("enum");
    return null;
  }

  static void collectRefs(JsonElement s, Set<String> out) {
    if (s.isJsonObject()) {
      for (Map.Entry<String, JsonElement> e : s.getAsJsonObject().entrySet()) {
        if (e.getKey().equals("$ref") && e.getValue().isJsonPrimitive()) out.add(e.getValue().getAsString().replace("#/$defs/", ""));
        else collectRefs(e.getValue(), out);
      }
    } else if (s.isJsonArray()) {
      for (JsonElement e : s.getAsJsonArray()) collectRefs(e, out);
    }
  }

  // ---- declarations -------------------------------------------------------------------------

  String declaration(String name) {
    if (!declares(name)) {
      aliasType(name, false); // checks its keywords
      return null;
    }
    JsonObject s = defs.getAsJsonObject(name);
    StringBuilder b = new StringBuilder();
    b.append("// Generated by extensions/jetbrains/generator from protocol/schema/lockroom.schema.json ($defs.")
        .append(name).append("). Do not edit.\n");
    b.append("package ").append(kPackage).append(";\n\n");
    b.append("import com.google.gson.JsonElement;\n");
    b.append("import com.google.gson.JsonObject;\n");
    b.append("import com.google.gson.annotations.SerializedName;\n");
    b.append("import java.util.List;\n");
    b.append("import java.util.Map;\n\n");
    String where = "$defs." + name;
    if (s.has("enum")) {
      b.append(enumDecl(name, s, "", false));
    } else if (s.has("oneOf") || s.has("anyOf")) {
      b.append(recordDecl(name, mergedObject(objectUnion(s, where), where), where, "", false).replace("\n" + doc(s), "\n" + doc(s)));
    } else {
      b.append(recordDecl(name, s, where, "", false));
    }
    return b.toString();
  }

  String enumDecl(String name, JsonObject s, String indent, boolean nested) {
    StringBuilder b = new StringBuilder();
    String d = doc(s);
    if (!d.isEmpty()) b.append(indent).append("/** ").append(d).append(" */\n");
    b.append(indent).append("public ").append(nested ? "static " : "").append("enum ").append(name).append(" {\n");
    JsonArray values = s.getAsJsonArray("enum");
    for (int i = 0; i < values.size(); i++) {
      String v = values.get(i).getAsString();
      b.append(indent).append("  @SerializedName(").append(quote(v)).append(") ").append(constant(v)).append("(")
          .append(quote(v)).append(")").append(i + 1 < values.size() ? ",\n" : ";\n");
    }
    b.append("\n").append(indent).append("  private final String wire;\n\n");
    b.append(indent).append("  ").append(name).append("(String wire) {\n").append(indent).append("    this.wire = wire;\n")
        .append(indent).append("  }\n\n");
    b.append(indent).append("  /** The value on the wire. */\n");
    b.append(indent).append("  public String wire() {\n").append(indent).append("    return wire;\n").append(indent).append("  }\n\n");
    b.append(indent).append("  /** The constant for a wire value, or null for one this version does not know. */\n");
    b.append(indent).append("  public static ").append(name).append(" of(String wire) {\n");
    b.append(indent).append("    for (").append(name).append(" v : values()) if (v.wire.equals(wire)) return v;\n");
    b.append(indent).append("    return null;\n").append(indent).append("  }\n");
    b.append(indent).append("}\n");
    return b.toString();
  }

  String recordDecl(String name, JsonObject s, String where, String indent, boolean nested) {
    Scope scope = new Scope(indent + "  ");
    scope.taken.add(name);
    collectRefs(s, scope.refs);
    Set<String> required = new HashSet<>();
    if (s.has("required")) for (JsonElement r : s.getAsJsonArray("required")) required.add(r.getAsString());
    Map<String, String[]> fields = new LinkedHashMap<>(); // property -> {java type, identifier, doc}
    if (s.has("properties")) {
      for (Map.Entry<String, JsonElement> p : s.getAsJsonObject("properties").entrySet()) {
        String prop = p.getKey();
        String type = javaType(p.getValue(), where + ".properties." + prop, capitalize(identifier(prop).replace("_", "")), scope,
            required.contains(prop));
        String d = p.getValue().isJsonObject() ? doc(p.getValue().getAsJsonObject()) : "";
        if (!required.contains(prop)) d = (d.isEmpty() ? "" : d + " ") + "(optional)";
        fields.put(prop, new String[] {type, identifier(prop), d});
      }
    }
    StringBuilder b = new StringBuilder();
    b.append(indent).append("/**\n");
    String d = doc(s);
    b.append(indent).append(" * ").append(d.isEmpty() ? name + "." : d).append("\n");
    for (String[] f : fields.values()) if (!f[2].isEmpty()) b.append(indent).append(" * @param ").append(f[1]).append(" ").append(f[2]).append("\n");
    b.append(indent).append(" */\n");
    b.append(indent).append("public ").append("record ").append(name).append("(");
    List<String> comps = new ArrayList<>();
    for (Map.Entry<String, String[]> f : fields.entrySet()) {
      String ann = f.getKey().equals(f.getValue()[1]) ? "" : "@SerializedName(" + quote(f.getKey()) + ") ";
      comps.add(ann + f.getValue()[0] + " " + f.getValue()[1]);
    }
    if (comps.isEmpty()) b.append(") {\n");
    else b.append("\n").append(indent).append("    ").append(String.join(",\n" + indent + "    ", comps)).append(") {\n");
    b.append(scope.nested);
    // A builder, for the params a client writes: only what it sets is sent.
    b.append("\n").append(indent).append("  public static Builder builder() {\n").append(indent).append("    return new Builder();\n")
        .append(indent).append("  }\n\n");
    b.append(indent).append("  /** Builds a ").append(name).append("; fields left unset are absent from the JSON. */\n");
    b.append(indent).append("  public static final class Builder {\n");
    for (String[] f : fields.values()) b.append(indent).append("    private ").append(f[0]).append(" ").append(f[1]).append(";\n");
    for (String[] f : fields.values()) {
      b.append("\n").append(indent).append("    public Builder ").append(f[1]).append("(").append(f[0]).append(" value) {\n")
          .append(indent).append("      this.").append(f[1]).append(" = value;\n").append(indent).append("      return this;\n")
          .append(indent).append("    }\n");
    }
    List<String> args = new ArrayList<>();
    for (String[] f : fields.values()) args.add(f[1]);
    b.append("\n").append(indent).append("    public ").append(name).append(" build() {\n").append(indent).append("      return new ")
        .append(name).append("(").append(String.join(", ", args)).append(");\n").append(indent).append("    }\n")
        .append(indent).append("  }\n");
    b.append(indent).append("}\n");
    return b.toString();
  }

}
