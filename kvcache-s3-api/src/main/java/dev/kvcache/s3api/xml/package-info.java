/**
 * S3's XML: the bodies of its answers ({@link dev.kvcache.s3api.xml.S3Xml}: errors, listings,
 * multipart uploads, deletions) and of the requests that carry one ({@link
 * dev.kvcache.s3api.xml.RequestXml}).
 *
 * <p>May import: the JDK, {@code dev.kvcache.s3api}.
 */
package dev.kvcache.s3api.xml;
