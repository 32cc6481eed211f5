package dev.kvcache.server;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.assignableTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.equivalentTo;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import dev.kvcache.spi.Tier;
import org.junit.jupiter.api.Test;

/**
 * What the server's packages may import, as their {@code package-info.java} says: no cycles, each
 * package above the ones it uses (errors, cache, access, api, then local and http), and no tier
 * class named anywhere but where the server starts: the server learns the stack's shape from what
 * its tiers report ({@link Tier#describe}, {@link Tier#capability}).
 */
class PackageRulesTest {

  private static final JavaClasses SERVER = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("dev.kvcache.server");

  private static final String ROOT = "dev.kvcache.server";

  @Test
  void noPackageImportsOneThatImportsItBack() {
    slices().assignedFrom(new SliceAssignment() {
      @Override
      public SliceIdentifier getIdentifierOf(com.tngtech.archunit.core.domain.JavaClass c) {
        return SliceIdentifier.of(c.getPackageName());
      }

      @Override
      public String getDescription() {
        return "packages";
      }
    }).should().beFreeOfCycles().check(SERVER);
  }

  @Test
  void errorsTheCacheAndEventsUseNoOtherPackageOfTheServer() {
    for (String pkg : new String[] {"errors", "cache", "events"}) {
      noClasses().that().resideInAPackage(ROOT + "." + pkg)
          .should().dependOnClassesThat().resideInAnyPackage(others(pkg))
          .check(SERVER);
    }
  }

  @Test
  void accessUsesOnlyErrors() {
    noClasses().that().resideInAPackage(ROOT + ".access")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT, ROOT + ".cache", ROOT + ".api",
            ROOT + ".local", ROOT + ".http")
        .check(SERVER);
  }

  @Test
  void theApiKnowsNoConnectionAndNoLocalCopy() {
    noClasses().that().resideInAPackage(ROOT + ".api")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT, ROOT + ".local", ROOT + ".http")
        .check(SERVER);
  }

  @Test
  void localCopiesAndConnectionsKnowEachOtherNot() {
    noClasses().that().resideInAPackage(ROOT + ".local")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT, ROOT + ".http").check(SERVER);
    noClasses().that().resideInAPackage(ROOT + ".http")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT, ROOT + ".local").check(SERVER);
  }

  /** Only the main class names the RAM tier, to hold its zeroing until the server listens. */
  @Test
  void noTierClassIsNamedButWhereTheServerStarts() {
    noClasses().that().resideInAnyPackage(ROOT + ".(*)..")
        .should().dependOnClassesThat(assignableTo(Tier.class).and(not(equivalentTo(Tier.class))))
        .check(SERVER);
    noClasses().that().resideInAPackage(ROOT + "..")
        .should().dependOnClassesThat().resideInAnyPackage("dev.kvcache.disk..",
            "dev.kvcache.s3..", "dev.kvcache.client..")
        .check(SERVER);
  }

  private static String[] others(String pkg) {
    return java.util.stream.Stream.of("", ".errors", ".cache", ".events", ".access", ".api",
            ".local", ".http")
        .filter(p -> !p.equals("." + pkg)).map(p -> ROOT + p).toArray(String[]::new);
  }
}
