package dev.kvcache.s3api;

/** The S3 operations the API answers, as S3 names them. */
public enum Operation {
  LIST_BUCKETS("ListBuckets"),
  HEAD_BUCKET("HeadBucket"),
  CREATE_BUCKET("CreateBucket"),
  DELETE_BUCKET("DeleteBucket"),
  LIST_OBJECTS_V2("ListObjectsV2"),
  LIST_OBJECTS("ListObjects"),
  DELETE_OBJECTS("DeleteObjects"),
  PUT_OBJECT("PutObject"),
  GET_OBJECT("GetObject"),
  HEAD_OBJECT("HeadObject"),
  DELETE_OBJECT("DeleteObject"),
  CREATE_MULTIPART_UPLOAD("CreateMultipartUpload"),
  UPLOAD_PART("UploadPart"),
  COMPLETE_MULTIPART_UPLOAD("CompleteMultipartUpload"),
  ABORT_MULTIPART_UPLOAD("AbortMultipartUpload");

  private final String s3Name;

  Operation(String s3Name) {
    this.s3Name = s3Name;
  }

  /** The operation's name in S3's API reference. */
  public String s3Name() {
    return s3Name;
  }

  /** Whether it stores or deletes, and so needs the right to write the bucket. */
  public boolean writes() {
    return switch (this) {
      case CREATE_BUCKET, DELETE_BUCKET, DELETE_OBJECTS, PUT_OBJECT, DELETE_OBJECT, CREATE_MULTIPART_UPLOAD,
          UPLOAD_PART, COMPLETE_MULTIPART_UPLOAD, ABORT_MULTIPART_UPLOAD -> true;
      default -> false;
    };
  }
}
