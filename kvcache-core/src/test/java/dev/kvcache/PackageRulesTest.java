package dev.kvcache;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.jupiter.api.Test;

/**
 * What the packages of kvcache-core may import, as their {@code package-info.java} says: no
 * package imports one that imports it back, the API imports no other package, the tier contract
 * only the API and sealing (whose master keys a tier is given), sealing only the API, and the
 * codec stands alone.
 */
class PackageRulesTest {

  private static final JavaClasses CORE = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("dev.kvcache");

  /** Each package is a slice of its own, so that a cycle between any two packages is found. */
  static final SliceAssignment BY_PACKAGE = new SliceAssignment() {
    @Override
    public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
      return SliceIdentifier.of(javaClass.getPackageName());
    }

    @Override
    public String getDescription() {
      return "packages";
    }
  };

  @Test
  void noPackageImportsOneThatImportsItBack() {
    slices().assignedFrom(BY_PACKAGE).should().beFreeOfCycles().check(CORE);
  }

  @Test
  void theApiImportsNoOtherPackageOfKvcache() {
    noClasses().that().resideInAPackage("dev.kvcache")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache.spi..",
            "dev.kvcache.ram..", "dev.kvcache.tiered..", "dev.kvcache.codec..",
            "dev.kvcache.wire..", "dev.kvcache.internal.memory..", "dev.kvcache.internal.codec..",
            "dev.kvcache.seal..")
        .check(CORE);
  }

  @Test
  void sealingImportsOnlyTheApi() {
    noClasses().that().resideInAPackage("dev.kvcache.seal..")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache.spi..",
            "dev.kvcache.ram..", "dev.kvcache.tiered..", "dev.kvcache.codec..",
            "dev.kvcache.wire..", "dev.kvcache.internal..")
        .check(CORE);
  }

  @Test
  void theTierContractImportsOnlyTheApiAndSealing() {
    noClasses().that().resideInAPackage("dev.kvcache.spi")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache.ram..",
            "dev.kvcache.tiered..", "dev.kvcache.codec..", "dev.kvcache.wire..",
            "dev.kvcache.internal..")
        .check(CORE);
  }

  @Test
  void theCodecStandsAlone() {
    noClasses().that().resideInAnyPackage("dev.kvcache.codec..", "dev.kvcache.internal.codec..")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache", "dev.kvcache.spi..",
            "dev.kvcache.ram..", "dev.kvcache.tiered..", "dev.kvcache.wire..",
            "dev.kvcache.internal.memory..", "dev.kvcache.internal.keys..")
        .check(CORE);
  }

  @Test
  void theRamTierKnowsNoStack() {
    noClasses().that().resideInAPackage("dev.kvcache.ram..")
        .should().dependOnClassesThat().resideInAPackage("dev.kvcache.tiered..")
        .check(CORE);
  }
}
