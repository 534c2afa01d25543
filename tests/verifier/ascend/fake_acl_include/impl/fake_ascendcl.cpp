// FAKE libascendcl.so for tests (see ../README.md): only aclGetRecentErrMsg.
extern "C" const char* aclGetRecentErrMsg() { return "fake CANN: EZ1001 attribute out of range"; }
