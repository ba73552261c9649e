# `cmake --install` layout and the CPack .deb (scripts/package-deb builds it).
#   bin/dlq-archive
#   <sysconfdir>/dlq-archive/dlq-archive.yaml     the service's config (a conffile in the .deb)
#   lib/systemd/system/dlq-archive.service        hardened unit (DLQ_INSTALL_SYSTEMD_UNIT)
#   share/doc/dlq-archive/                         README, doc/*.md, examples/, copyright
# For the .deb the prefix is /usr and CMAKE_INSTALL_SYSCONFDIR is /etc.
include(GNUInstallDirs)
option(DLQ_INSTALL_SYSTEMD_UNIT "Install the systemd unit" ON)

set(DLQ_DOCDIR "${CMAKE_INSTALL_DATAROOTDIR}/doc/dlq-archive")
# Absolute paths for the unit: GNUInstallDirs maps sysconfdir to /etc for the /usr prefix.
set(DLQ_FULL_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(DLQ_FULL_SYSCONFDIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}")
set(DLQ_FULL_DOCDIR "${CMAKE_INSTALL_PREFIX}/${DLQ_DOCDIR}")

install(TARGETS dlq-archive RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES packaging/dlq-archive.yaml DESTINATION ${CMAKE_INSTALL_SYSCONFDIR}/dlq-archive)
install(FILES README.md DESTINATION ${DLQ_DOCDIR})
install(FILES LICENSE DESTINATION ${DLQ_DOCDIR} RENAME copyright)
install(DIRECTORY doc/ DESTINATION ${DLQ_DOCDIR} FILES_MATCHING PATTERN "*.md")
install(FILES examples/dlq-archive.yaml examples/prometheus-rules.yaml DESTINATION ${DLQ_DOCDIR}/examples)
if(DLQ_INSTALL_SYSTEMD_UNIT)
  configure_file(packaging/systemd/dlq-archive.service.in ${CMAKE_BINARY_DIR}/dlq-archive.service @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/dlq-archive.service DESTINATION lib/systemd/system)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlq-archive)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "dlq-archive")
set(CPACK_PACKAGE_CONTACT "dlq-archive maintainers <dlq-archive@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "archive SQS dead-letter queues to S3 before their messages expire")
set(CPACK_PACKAGE_DESCRIPTION
    "dlq-archive watches SQS dead-letter queues, alarms before messages expire, archives them to S3 as gzipped "
    "JSON lines and deletes them only once the archive is durable. This package runs it as a hardened systemd "
    "service (dlq-archive.service) configured by /etc/dlq-archive/dlq-archive.yaml.")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # dlq-archive_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from dpkg-shlibdeps
# libcurl4: loaded at run time for proxies (dlopen), so dpkg-shlibdeps cannot see it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "ca-certificates, libcurl4")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/packaging/debian/conffiles ${CMAKE_SOURCE_DIR}/packaging/debian/postinst
    ${CMAKE_SOURCE_DIR}/packaging/debian/prerm ${CMAKE_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_SOURCE_DIR}/dist)
include(CPack)
