-- A small nsys export (the tables and columns `nsys export --type sqlite` writes and the reader queries):
-- the seed of fuzz_nsys_sqlite. seed_corpus.sh builds it with page_size 512, so that the file stays small.
PRAGMA page_size = 512;
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
  cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER, graphId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
  bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER,
  ctxHandle INTEGER);
INSERT INTO StringIds VALUES (1, 'matmul_naive(float const*, float const*, float*, int)'), (2, 'matmul_naive'),
  (3, '_Z12matmul_naivePKfS0_Pfi'), (4, 'cudaLaunchKernel_v7000'), (5, 'cudaMalloc_v3020'),
  (6, 'cudaMemcpyAsync_v3020'), (7, 'aten::mm, seq = 5, op_id = 9'), (8, 'cudaProfilerStart_v4000'),
  (9, 'cudaProfilerStop_v4000'), (10, 'cuLaunchKernel'), (11, 'cudaMemsetAsync_v3020');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (2000, 2500, 0, 1, 7, 100, 281546145660928, 1, 2, 3, 0, 0, 40, 16, 16, 1, 16, 16, 1, 1024, 512, 0, 0, 1, 0, 0, 0, NULL),
  (3100, 3200, 0, 1, 7, 103, 281546145660928, 1, 2, 3, 0, 0, 40, 8, 1, 1, 256, 1, 1, 0, 0, 0, 0, 2, 0, 17, 0, 5);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1010, 0, 281546145665178, 90, 8, 0, 0), (1500, 1600, 0, 281546145665178, 99, 5, 0, 0),
  (1700, 1710, 0, 281546145665178, 100, 4, 0, 0), (1720, 1730, 0, 281546145665178, 101, 6, 0, 0), (1740, 1750, 0, 281546145665178, 104, 11, 0, 0),
  (4000, 4010, 0, 281546145665178, 102, 9, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (3000, 3050, 0, 281546145665178, 103, 10, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2600, 2700, 0, 1, 7, 101, 281546145660928, 4096, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (2710, 2720, 0, 1, 7, 104, 281546145660928, 0, 512, NULL, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId, category) VALUES
  (1100, NULL, 75, 'my_domain', 281546145665178, NULL, 3, NULL), (1200, 2900, 59, 'forward', 281546145665178, NULL, 0, NULL),
  (1300, 2800, 59, 'nn.Module: layer0', 281546145665178, NULL, 0, NULL), (1650, 1750, 59, NULL, 281546145665178, 7, 3, 2),
  (1800, 1900, 60, 'async', 281546145665178, NULL, 0, NULL), (1950, NULL, 59, 'never_closed', 281546145665178, NULL, 0, NULL),
  (1960, NULL, 34, 'a mark', 281546145665178, NULL, 0, NULL);
INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, cuDevice) VALUES (0, 0, 'NVIDIA H200', 132, 0);
