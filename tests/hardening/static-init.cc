// static-init: a C++ program whose static initialiser connects, before main() runs.
//
// STATIC_CONNECT=HOST:PORT (IPv4).  main() prints "static: OK" or "static: ENAME"
// (what the initialiser saw) and exits 0 or 1.
#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace {

struct Connection {
	int error = -1; // -1: nothing asked
	Connection()
	{
		const char *spec = std::getenv("STATIC_CONNECT");
		if (!spec)
			return;
		std::string s(spec);
		auto colon = s.rfind(':');
		sockaddr_in to{};
		to.sin_family = AF_INET;
		to.sin_port = htons(static_cast<uint16_t>(std::stoi(s.substr(colon + 1))));
		if (colon == std::string::npos ||
		    inet_pton(AF_INET, s.substr(0, colon).c_str(), &to.sin_addr) != 1) {
			error = EINVAL;
			return;
		}
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		error = connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof(to)) == 0 ? 0 : errno;
		close(fd);
	}
};

Connection at_start_up; // constructed before main()

} // namespace

int main()
{
	if (at_start_up.error < 0) {
		std::cerr << "static-init: set STATIC_CONNECT=HOST:PORT\n";
		return 2;
	}
	const char *name = at_start_up.error ? strerrorname_np(at_start_up.error) : "OK";
	std::cout << "static: " << name << std::endl;
	return at_start_up.error ? 1 : 0;
}
