// Builds the lockroom plugin with the IntelliJ Platform Gradle Plugin (2.x):
//   gradle wrapper --gradle-version 8.13   (once; any Gradle 8.10+ can make the wrapper)
//   ./gradlew buildPlugin                  → build/distributions/lockroom-intellij-<version>.zip
//   ./gradlew runIde                       → a sandboxed IDE with the plugin
// The protocol core is compiled from ../core/src, with the protocol types generated from
// ../../../protocol/schema by ../generator (the same generator ../run uses) before compileJava.
plugins {
    java
    id("org.jetbrains.intellij.platform") version "2.5.0"
}

group = "dev.lockroom"
version = "0.1.0"

repositories {
    mavenCentral()
    intellijPlatform {
        defaultRepositories()
    }
}

val generator: SourceSet by sourceSets.creating {
    java.srcDir("../generator/src")
}

dependencies {
    "generatorImplementation"("com.google.code.gson:gson:2.10.1")
    implementation("com.google.code.gson:gson:2.10.1")
    intellijPlatform {
        intellijIdeaCommunity("2024.3.5")
    }
}

val generatedProtocol = layout.buildDirectory.dir("generated/protocol")

val generateProtocol by tasks.registering(JavaExec::class) {
    description = "Generates the protocol's Java types from protocol/schema"
    classpath = generator.runtimeClasspath
    mainClass.set("dev.lockroom.gen.GenerateProtocol")
    val schema = rootProject.file("../../../protocol/schema")
    inputs.dir(schema)
    outputs.dir(generatedProtocol)
    args(schema.absolutePath, generatedProtocol.get().asFile.absolutePath)
}

sourceSets {
    main {
        java.srcDir("../core/src")
        java.srcDir(generatedProtocol)
    }
}

tasks.compileJava {
    dependsOn(generateProtocol)
}

java {
    toolchain {
        languageVersion.set(JavaLanguageVersion.of(21))
    }
}

intellijPlatform {
    pluginConfiguration {
        id = "dev.lockroom.intellij"
        name = "lockroom"
        version = project.version.toString()
        ideaVersion {
            sinceBuild = "243"
        }
    }
}
