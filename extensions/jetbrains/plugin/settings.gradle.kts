// The lockroom IntelliJ plugin: the IntelliJ Platform layer (src/main/java) over the protocol
// core (../core/src, plain Java, built and tested without Gradle by ../run). Needs a machine that
// reaches the Gradle Plugin Portal, Maven Central and JetBrains' repositories.
rootProject.name = "lockroom-intellij"

pluginManagement {
    repositories {
        gradlePluginPortal()
        mavenCentral()
    }
}
