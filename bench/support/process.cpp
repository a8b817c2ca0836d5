//
// bench/support/process.cpp
//

#include "process.hpp"

#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if !defined(MADV_POPULATE_READ)
# define MADV_POPULATE_READ 22
#endif // !defined(MADV_POPULATE_READ)

namespace bench {

resident_set resident() noexcept
{
  resident_set r;
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return r;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0)
    return r;
  text[n] = '\0';
  // Fields, in pages: size resident shared(file-backed) text lib data dt.
  char* p = text;
  std::strtoll(p, &p, 10);
  const long long resident_pages = std::strtoll(p, &p, 10);
  const long long shared_pages = std::strtoll(p, &p, 10);
  const long long kib_per_page = ::sysconf(_SC_PAGESIZE) / 1024;
  r.total_kib = resident_pages * kib_per_page;
  r.anonymous_kib = (resident_pages - shared_pages) * kib_per_page;
  return r;
}

bool prefault_mapped_files() noexcept
{
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps)
    return false;
  bool all = true;
  char line[512];
  while (std::fgets(line, sizeof line, maps))
  {
    // start-end perms offset dev inode path; inode 0 means anonymous.
    unsigned long start = 0;
    unsigned long end = 0;
    char perms[8] = {};
    unsigned long inode = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %lu", &start, &end, perms,
          &inode) != 4 || inode == 0 || perms[0] != 'r')
      continue;
    if (::madvise(reinterpret_cast<void*>(start), end - start,
          MADV_POPULATE_READ) != 0)
      all = false;
  }
  std::fclose(maps);
  return all;
}

cpu_seconds this_thread_cpu_seconds() noexcept
{
  rusage u{};
  ::getrusage(RUSAGE_THREAD, &u);
  return {double(u.ru_utime.tv_sec) + double(u.ru_utime.tv_usec) * 1e-6,
    double(u.ru_stime.tv_sec) + double(u.ru_stime.tv_usec) * 1e-6};
}

void raise_descriptor_limit() noexcept
{
  rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max)
  {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

} // namespace bench
