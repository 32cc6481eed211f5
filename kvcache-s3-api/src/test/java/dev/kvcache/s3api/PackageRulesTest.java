package dev.kvcache.s3api;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * What the module's packages may import, as their {@code package-info.java} says: the errors at
 * the root use neither package, signatures know nothing of bodies, and nothing uses a class of
 * kvcache's other modules.
 */
class PackageRulesTest {

  private static final JavaClasses API = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("dev.kvcache.s3api");

  @Test
  void theRootUsesNeitherPackageAndSignaturesKnowNoBodies() {
    noClasses().that().resideInAPackage("dev.kvcache.s3api")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache.s3api.auth",
            "dev.kvcache.s3api.body")
        .check(API);
    noClasses().that().resideInAPackage("dev.kvcache.s3api.auth")
        .should().dependOnClassesThat().resideInAPackage("dev.kvcache.s3api.body")
        .check(API);
  }

  @Test
  void nothingUsesAnotherModuleOfKvcache() {
    noClasses().should().dependOnClassesThat().resideInAnyPackage("dev.kvcache",
            "dev.kvcache.spi..", "dev.kvcache.server..", "dev.kvcache.s3", "dev.kvcache.s3.internal..")
        .check(API);
  }
}
